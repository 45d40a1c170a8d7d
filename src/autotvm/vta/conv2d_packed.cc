#include "autotvm/vta/conv2d_packed.h"

#include <nlohmann/json.hpp>

namespace tessera::autotvm::vta {

namespace {

using tessera::vta::Conv2dPackedSchedule;

nlohmann::json split(int64_t extent, int64_t tile) { return nlohmann::json::array({extent / tile, tile}); }

// The fallback's schedule, or the smallest tiles when nothing larger fits.
Conv2dPackedSchedule hand_written(const ops::Conv2dPackedAttrs& attrs, const tessera::vta::VtaConfig& config) {
  const int64_t oh = attrs.out_height(), ow = attrs.out_width(), cb = attrs.in_channels / attrs.block_in;
  for (int64_t tci = cb; tci >= 1; --tci) {
    if (cb % tci) continue;
    for (int64_t th = oh; th >= 1; --th) {
      if (oh % th) continue;
      const Conv2dPackedSchedule s{
          .tile_h = th, .tile_w = ow, .tile_co = 1, .tile_ci = tci, .oc_nthread = 1, .h_nthread = (oh / th) % 2 ? 1 : 2};
      if (tessera::vta::conv2d_packed_misfit(attrs, s, config).empty()) return s;
    }
  }
  return {};
}

}  // namespace

ConfigSpace conv2d_packed_space(const ops::Conv2dPackedAttrs& attrs, const tessera::vta::VtaConfig& config) {
  attrs.validate();
  const int64_t oh = attrs.out_height(), ow = attrs.out_width();
  const int64_t cb = attrs.in_channels / attrs.block_in, ob = attrs.out_channels / attrs.block_out;
  ConfigSpace space;
  space.define_split("tile_h", oh);
  space.define_split("tile_w", ow);
  space.define_split("tile_ci", cb);
  space.define_split("tile_co", ob);
  space.define_knob("oc_nthread", {1, 2});
  space.define_knob("h_nthread", {1, 2});
  const Conv2dPackedSchedule s = hand_written(attrs, config);
  space.set_fallback({{"tile_h", split(oh, s.tile_h)},
                      {"tile_w", split(ow, s.tile_w)},
                      {"tile_ci", split(cb, s.tile_ci)},
                      {"tile_co", split(ob, s.tile_co)},
                      {"oc_nthread", s.oc_nthread},
                      {"h_nthread", s.h_nthread}});
  return space;
}

Conv2dPackedSchedule conv2d_packed_schedule(const ConfigEntity& config) {
  return {.tile_h = config.split("tile_h").back(),
          .tile_w = config.split("tile_w").back(),
          .tile_co = config.split("tile_co").back(),
          .tile_ci = config.split("tile_ci").back(),
          .oc_nthread = config.value("oc_nthread").get<int64_t>(),
          .h_nthread = config.value("h_nthread").get<int64_t>()};
}

}  // namespace tessera::autotvm::vta
