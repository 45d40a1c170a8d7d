// A depthwise convolution and the 1x1 projection that reads it, in one
// kernel: every plan (rows per tile, register tiles that do and do not
// divide the tile) and both strides match the two reference convolutions
// applied one after the other, and the depthwise output lives in a buffer of
// the tile's rows only.
#include "schedule/depthwise_projection_tile.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ops/conv2d.h"
#include "ops/depthwise_nchwc.h"
#include "ops/elementwise.h"
#include "ops/reference.h"
#include "testing/check.h"
#include "tessera/error.h"

namespace tessera::schedule {
namespace {

struct Block {
  int64_t channels, size, out_channels, stride;
};

// data -> depthwise 3x3 (pad 1) + bias, clipped to [0, 6] -> 1x1 + bias.
ops::Workload depthwise_projection(const Block& b) {
  const int64_t c = b.channels / 8, oc = b.out_channels / 8;
  const ops::Shape data_shape{1, c, b.size, b.size, 8}, dw_shape{c, 1, 3, 3, 1, 8}, w_shape{oc, c, 1, 1, 8, 8};
  const auto dw_attrs = ops::Conv2dAttrs::symmetric(b.stride, 1);
  ir::Tensor data = ir::placeholder(data_shape, "data");
  ir::Tensor dw_weight = ir::placeholder(dw_shape, "dw_weight");
  ir::Tensor dw_bias = ir::placeholder({c, 8}, "dw_bias");
  ir::Tensor weight = ir::placeholder(w_shape, "weight");
  ir::Tensor bias = ir::placeholder({oc, 8}, "bias");
  ir::Tensor dw = ops::depthwise_conv2d_nchwc(data, dw_weight, dw_attrs);
  ir::Tensor mid = ops::clip(ops::bias_add(dw, dw_bias, std::vector<size_t>{1, 4}), 0.f, 6.f);
  ir::Tensor out = ops::bias_add(ops::conv2d_nchwc(mid, weight, ops::Conv2dAttrs{}), bias, std::vector<size_t>{1, 4});
  const ops::Shape mid_shape = dw->shape;
  auto reference = [=](const std::vector<const float*>& in, float* o) {
    std::vector<float> m(mid_shape[1] * mid_shape[2] * mid_shape[3] * 8);
    ops::reference::depthwise_conv2d_nchwc(in[0], data_shape, in[1], dw_shape, dw_attrs, m.data());
    const int64_t plane = mid_shape[2] * mid_shape[3] * 8;
    for (int64_t i = 0; i < static_cast<int64_t>(m.size()); ++i)
      m[i] = std::clamp(m[i] + in[2][(i / plane) * 8 + i % 8], 0.f, 6.f);
    ops::reference::conv2d_nchwc(m.data(), mid_shape, in[3], w_shape, ops::Conv2dAttrs{}, o);
    const int64_t out_plane = mid_shape[2] * mid_shape[3] * 8;
    for (int64_t i = 0; i < oc * out_plane; ++i) o[i] += in[4][(i / out_plane) * 8 + i % 8];
  };
  return {"depthwise_projection", ir::ComputeDAG({out}), reference};
}

TEST(DepthwiseProjectionTile, EveryPlanMatchesTheReference) {
  for (const Block& b : {Block{16, 6, 16, 1}, Block{24, 12, 8, 2}, Block{16, 7, 24, 1}})
    for (int64_t rows : {1, 3})
      for (int64_t tile_ow : {4, 7}) {
        const auto w = depthwise_projection(b);
        const int64_t out_rows = w.dag.outputs()[0]->shape[3] / (b.size / b.stride);
        if (out_rows % rows != 0) continue;
        auto r = testing::check_schedule(w, depthwise_projection_trace(w.dag, {.rows = rows, .tile_ow = tile_ow}));
        EXPECT_LE(r.max_rel_error, 1e-4) << b.channels << " ch " << b.size << " stride " << b.stride << " rows "
                                         << rows << " tile_ow " << tile_ow << "\n"
                                         << r.lowered;
      }
}

TEST(DepthwiseProjectionTile, BuffersOnlyTheTilesRowsOfTheDepthwiseOutput) {
  const auto w = depthwise_projection({16, 6, 16, 1});
  auto r = testing::check_schedule(w, depthwise_projection_trace(w.dag, {.rows = 2, .tile_ow = 4}));
  EXPECT_LE(r.max_rel_error, 1e-4);
  EXPECT_NE(r.lowered.find("allocate T_clip[1, 2, 2, 6, 8]"), std::string::npos) << r.lowered;
}

TEST(DepthwiseProjectionTile, AnotherDagIsAnErrorNamingTheSchedule) {
  const auto w = depthwise_projection({16, 6, 16, 1});
  EXPECT_THROW(depthwise_projection_trace(w.dag, {.rows = 4}), tessera::Error);  // 4 does not divide 6
  ir::Tensor data = ir::placeholder({1, 2, 6, 6, 8}, "data");
  ir::Tensor out = ops::relu(data);
  try {
    depthwise_projection_trace(ir::ComputeDAG({out}), {});
    FAIL() << "scheduled";
  } catch (const tessera::Error& e) {
    EXPECT_NE(std::string(e.what()).find("depthwise + projection schedule"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::schedule
