// depthwise_conv2d in NCHW[x]c: the declaration (interpreted and compiled)
// agrees with the NCHW depthwise reference on packed data, and the registry
// routes layout NCHWc to it with clear errors for what it does not support.
#include "ops/depthwise_nchwc.h"

#include <gtest/gtest.h>

#include "ops/layout.h"
#include "ops/reference.h"
#include "ops/registry.h"
#include "ops_test_util.h"
#include "schedule/default_schedule.h"
#include "tessera/error.h"
#include "testing/check.h"

namespace tessera::ops {
namespace {

struct DepthwiseCase {
  Shape input, weight;
  int64_t stride, pad, bn;
};

OpArgs nchwc_args(const DepthwiseCase& c) {
  OpArgs a;
  a.input = c.input;
  a.weight = c.weight;
  a.stride = c.stride;
  a.pad = c.pad;
  a.layout = "NCHWc";
  a.ic_bn = c.bn;
  return a;
}

const std::vector<DepthwiseCase> kCases = {
    {{1, 16, 9, 9}, {16, 1, 3, 3}, 1, 1, 8},
    {{2, 12, 11, 8}, {12, 1, 3, 3}, 2, 1, 4},
    {{1, 8, 7, 10}, {8, 1, 5, 3}, 1, 0, 8},
};

TEST(OpsDepthwiseNchwc, MatchesNchwReferenceOnPackedData) {
  for (const auto& c : kCases) {
    Workload w = make_workload("depthwise_conv2d", nchwc_args(c));
    auto x = test::random_data(num_elements(c.input), 3);
    auto k = test::random_data(num_elements(c.weight), 4);
    // The NCHW reference, packed afterwards...
    Conv2dAttrs attrs = Conv2dAttrs::symmetric(c.stride, c.pad);
    Shape out = depthwise_conv2d_nchw_output_shape(c.input, c.weight, attrs);
    std::vector<float> want(num_elements(out));
    reference::depthwise_conv2d_nchw(x.data(), c.input, k.data(), c.weight, attrs, want.data());
    std::vector<float> want_packed = pack_nchw_to_nchwc(want.data(), out, c.bn);
    // ... equals the declaration, interpreted on packed inputs.
    std::vector<float> xp = pack_nchw_to_nchwc(x.data(), c.input, c.bn);
    std::vector<float> kp = pack_depthwise_weight(k.data(), c.weight, c.bn);
    auto placeholders = w.dag.placeholders();
    ASSERT_EQ(placeholders.size(), 2u);
    std::vector<const float*> in = placeholders[0]->name == "data" ? std::vector<const float*>{xp.data(), kp.data()}
                                                                   : std::vector<const float*>{kp.data(), xp.data()};
    std::vector<float> got = test::DagInterpreter().run(w.dag, in);
    EXPECT_LE(test::max_relative_error(got, want_packed), 1e-5);
    std::vector<float> ref(got.size());
    w.reference(in, ref.data());
    EXPECT_LE(test::max_relative_error(ref, want_packed), 1e-5);
  }
}

TEST(OpsDepthwiseNchwc, CompiledMatchesReferenceWithEpilogue) {
  for (const auto& c : kCases) {
    OpArgs a = nchwc_args(c);
    a.bias = a.relu = true;
    Workload w = make_workload("depthwise_conv2d", a);
    auto r = tessera::testing::check_schedule(w, schedule::default_schedule(w.dag), 2);
    EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
  }
}

TEST(OpsDepthwiseNchwc, RegistryRejectsWhatItCannotPack) {
  OpArgs a = nchwc_args(kCases[0]);
  a.weight = {8, 2, 3, 3};  // channel multiplier 2
  a.input = {1, 8, 9, 9};
  EXPECT_THROW(make_workload("depthwise_conv2d", a), Error);
  a = nchwc_args(kCases[0]);
  a.ic_bn = 5;
  EXPECT_THROW(make_workload("depthwise_conv2d", a), Error);
  a.ic_bn = 8;
  a.oc_bn = 4;
  EXPECT_THROW(make_workload("depthwise_conv2d", a), Error);
  a.oc_bn = 0;
  a.ic_bn = 0;  // default block: largest of 16, 8, .. dividing the channels
  EXPECT_EQ(make_workload("depthwise_conv2d", a).dag.outputs()[0]->shape, (Shape{1, 1, 9, 9, 16}));
}

}  // namespace
}  // namespace tessera::ops
