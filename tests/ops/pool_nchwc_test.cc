// Pooling over NCHW[x]c data: compiled with the blocked-pool schedules, it
// equals the NCHW reference on unpacked data, packed back (windows with
// padding, strides, average with and without the padding counted; global
// average pooling).
#include <gtest/gtest.h>

#include "ops/layout.h"
#include "ops/pooling.h"
#include "ops/reference.h"
#include "ops/registry.h"
#include "tessera/error.h"
#include "schedule/manual_schedule.h"
#include "testing/check.h"

namespace tessera::ops {
namespace {

struct PoolCase {
  Shape nchw;
  int64_t block;
  Pool2dAttrs attrs;
  bool is_max;
};

Workload blocked_pool(const PoolCase& c) {
  const Shape packed = {c.nchw[0], c.nchw[1] / c.block, c.nchw[2], c.nchw[3], c.block};
  const ir::Tensor data = ir::placeholder(packed, "data");
  Workload w;
  w.op = c.is_max ? "max_pool" : "avg_pool";
  w.dag = ir::ComputeDAG({c.is_max ? max_pool2d(data, c.attrs) : avg_pool2d(data, c.attrs)});
  w.reference = [c, packed](const std::vector<const float*>& in, float* out) {
    const std::vector<float> x = unpack_nchwc_to_nchw(in[0], packed);
    const Shape pooled = pool2d_output_shape("pool", c.nchw, c.attrs);
    std::vector<float> y(num_elements(pooled));
    (c.is_max ? reference::max_pool2d : reference::avg_pool2d)(x.data(), c.nchw, c.attrs, y.data());
    const std::vector<float> packed_y = pack_nchw_to_nchwc(y.data(), pooled, c.block);
    std::copy(packed_y.begin(), packed_y.end(), out);
  };
  return w;
}

TEST(OpsPoolNchwc, CompiledMatchesTheNchwReference) {
  const PoolCase cases[] = {
      {{1, 16, 12, 12}, 8, Pool2dAttrs::symmetric(3, 2, 1), true},  // ResNet's stem pool
      {{2, 8, 9, 7}, 4, Pool2dAttrs::symmetric(2, 2, 0), true},
      {{1, 16, 10, 10}, 16, Pool2dAttrs::symmetric(3, 1, 1, false), false},  // padding not counted
      {{1, 8, 7, 7}, 8, Pool2dAttrs::symmetric(3, 2, 1, true), false},       // padding counted
  };
  for (const PoolCase& c : cases) {
    const Workload w = blocked_pool(c);
    ASSERT_EQ(w.dag.outputs()[0]->shape.size(), 5u);
    const schedule::Trace trace = schedule::pool_nchwc_schedule(w.dag);
    EXPECT_EQ(schedule::best_manual_schedule(w.dag, schedule::VectorUnit{}).to_json(), trace.to_json());
    for (int threads : {1, 2}) {
      const auto r = tessera::testing::check_schedule(w, trace, threads);
      EXPECT_LE(r.max_rel_error, 1e-5) << w.op << " " << shape_to_string(c.nchw) << " block " << c.block << "\n"
                                       << r.lowered;
    }
  }
}

TEST(OpsPoolNchwc, GlobalAveragePoolingCompiledMatchesTheNchwReference) {
  struct Case {
    Shape nchw;
    int64_t block;
  };
  for (const Case& c : {Case{{1, 64, 7, 7}, 16}, Case{{2, 24, 5, 3}, 8}, Case{{1, 12, 1, 1}, 4}}) {
    OpArgs a;
    a.input = c.nchw;
    a.layout = "NCHWc";
    a.ic_bn = c.block;
    const Workload w = make_workload("global_avg_pool", a);
    ASSERT_EQ(w.dag.outputs()[0]->shape, (Shape{c.nchw[0], c.nchw[1] / c.block, 1, 1, c.block}));
    const schedule::Trace trace = schedule::global_pool_nchwc_schedule(w.dag);
    EXPECT_EQ(schedule::best_manual_schedule(w.dag, schedule::VectorUnit{}).to_json(), trace.to_json());
    for (int threads : {1, 2}) {
      const auto r = tessera::testing::check_schedule(w, trace, threads);
      EXPECT_LE(r.max_rel_error, 1e-5) << shape_to_string(c.nchw) << " block " << c.block << "\n" << r.lowered;
    }
  }
}

TEST(OpsPoolNchwc, GlobalAveragePoolingWithoutABlockTakesTheLargestThatDividesTheChannels) {
  OpArgs a;
  a.input = {1, 24, 7, 7};  // 16 does not divide 24; 8 does
  a.layout = "NCHWc";
  EXPECT_EQ(make_workload("global_avg_pool", a).dag.outputs()[0]->shape, (Shape{1, 3, 1, 1, 8}));
}

TEST(OpsPoolNchwc, GlobalAveragePoolingRefusesABlockThatDoesNotDivideTheChannels) {
  OpArgs a;
  a.input = {1, 24, 7, 7};
  a.layout = "NCHWc";
  a.ic_bn = 16;
  try {
    make_workload("global_avg_pool", a);
    FAIL() << "a 16-channel block of 24 channels was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ic_bn=16 does not divide C=24"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::ops
