#include "autotvm/vta/conv2d_packed.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "support/fnv1a.h"
#include "tessera/error.h"
#include "vta/target_config.h"

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
      const Conv2dPackedSchedule s{.tile_h = th,
                                   .tile_w = ow,
                                   .tile_co = 1,
                                   .tile_ci = tci,
                                   .oc_nthread = 1,
                                   .h_nthread = (oh / th) % 2 ? 1 : 2};
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
  return Conv2dPackedSchedule::from_config(config.to_json());
}

namespace {

// The template's entry in the registry of tasks: its name and kind; its
// space and configs come from the functions above, not from a DAG.
const Template& vta_template() {
  static const Template t{kConv2dPackedTemplate, "vta", nullptr, nullptr, nullptr,
                          [](const ops::Workload&, const target::Target&, const ConfigEntity&) {
                            return schedule::Trace();
                          }};
  return t;
}

}  // namespace

ops::Conv2dPackedAttrs tuning_attrs(const ops::Conv2dPackedAttrs& attrs) {
  ops::Conv2dPackedAttrs a = attrs;
  a.shift = attrs.shift > 0 ? 8 : 0;
  a.clip_min = a.residual_clip_min = -128;
  a.clip_max = a.residual_clip_max = 127;
  return a;
}

Task conv2d_packed_task(const ops::Conv2dPackedAttrs& actual, const target::Target& target) {
  if (target.accelerator != "vta") throw Error("conv2d_packed runs on the VTA accelerator, not '" + target.str() + "'");
  const ops::Conv2dPackedAttrs attrs = tuning_attrs(actual);
  Task t;
  t.op = "conv2d_packed";
  t.target = target;
  t.tmpl = &vta_template();
  t.space = conv2d_packed_space(attrs, tessera::vta::config_of(target));
  t.accelerator = ops::conv2d_packed_to_json(attrs);
  t.accelerator["describe"] = attrs.to_string();
  t.accelerator_flop = attrs.flop();
  t.record_key = fmt::format("vta-{:016x}", support::fnv1a(attrs.to_string()));
  return t;
}

tessera::vta::Conv2dPackedSchedule dispatch_conv2d_packed(const Task& task, records::ApplyHistoryBest* history,
                                                          std::ostream& warnings, bool* tuned) {
  *tuned = false;
  if (history && history->lookup(task.workload_key(), task.target, task.describe(), warnings)) {
    const ops::Conv2dPackedAttrs attrs = ops::conv2d_packed_from_json(task.accelerator);
    for (const records::Record& r : history->ranked(task.workload_key(), task.target)) {
      try {
        const Conv2dPackedSchedule s = conv2d_packed_schedule(task.space.from_json(r.config));
        const std::string misfit = tessera::vta::conv2d_packed_misfit(attrs, s, tessera::vta::config_of(task.target));
        if (!misfit.empty()) throw Error(misfit);
        *tuned = true;
        return s;
      } catch (const std::exception& e) {
        warnings << "warning: a record of " << task.describe() << " (config " << r.config.dump() << ") cannot be used ("
                 << e.what() << "); trying the next best\n";
      }
    }
  }
  return conv2d_packed_schedule(task.space.fallback());
}

}  // namespace tessera::autotvm::vta
