// Layout conversions round-trip, and bad shapes or attributes fail with a
// one-line message naming the argument.
#include <gtest/gtest.h>

#include <algorithm>

#include "ops/conv2d.h"
#include "ops/dense.h"
#include "ops/elementwise.h"
#include "ops/layout.h"
#include "ops/registry.h"
#include "ops/workloads.h"
#include "ops_test_util.h"
#include "tessera/error.h"

namespace tessera::ops {
namespace {

using test::random_data;

TEST(OpsLayout, PackUnpackRoundTrip) {
  const Shape nchw = {2, 12, 5, 3};
  auto x = random_data(num_elements(nchw), 1);
  for (int64_t bn : {1, 2, 3, 4, 6, 12}) {
    auto packed = pack_nchw_to_nchwc(x.data(), nchw, bn);
    EXPECT_EQ(unpack_nchwc_to_nchw(packed.data(), nchwc_shape(nchw, bn)), x) << "bn=" << bn;
  }
  EXPECT_EQ(nhwc_to_nchw(nchw_to_nhwc(x.data(), nchw).data(), {2, 5, 3, 12}), x);
}

TEST(OpsLayout, PackedElementsLandWhereTheDefinitionSays) {
  const Shape nchw = {1, 8, 2, 3};
  std::vector<float> x(num_elements(nchw));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  auto packed = pack_nchw_to_nchwc(x.data(), nchw, 4);
  // packed[n][c/4][h][w][c%4] == x[n][c][h][w]; channel 6, h 1, w 2.
  EXPECT_EQ(packed[((0 * 2 + 1) * 2 + 1) * 3 * 4 + 2 * 4 + 2], x[(6 * 2 + 1) * 3 + 2]);

  const Shape oihw = {6, 4, 3, 2};
  std::vector<float> w(num_elements(oihw));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i);
  auto pw = pack_oihw_to_oihwio(w.data(), oihw, 2, 3);
  Shape ps = oihwio_shape(oihw, 2, 3);
  EXPECT_EQ(ps, (Shape{2, 2, 3, 2, 2, 3}));
  // o = 4 (chunk 1, block 1), i = 3 (chunk 1, block 1), kh = 2, kw = 1.
  int64_t at = ((((1 * 2 + 1) * 3 + 2) * 2 + 1) * 2 + 1) * 3 + 1;
  EXPECT_EQ(pw[at], w[((4 * 4 + 3) * 3 + 2) * 2 + 1]);

  auto hwio = oihw_to_hwio(w.data(), oihw);
  EXPECT_EQ(hwio[((2 * 2 + 1) * 4 + 3) * 6 + 4], w[((4 * 4 + 3) * 3 + 2) * 2 + 1]);
}

TEST(OpsLayout, ChooseChannelBlockPicksLargestPowerOfTwoUpTo16) {
  EXPECT_EQ(choose_channel_block(64), 16);
  EXPECT_EQ(choose_channel_block(24), 8);
  EXPECT_EQ(choose_channel_block(12), 4);
  EXPECT_EQ(choose_channel_block(6), 2);
  EXPECT_EQ(choose_channel_block(3), 1);
}

// Runs f, expects tessera::Error, and returns its message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no tessera::Error thrown";
  return "";
}

// The message contains every one of `parts` and is a single line.
void expect_error(const std::string& message, std::initializer_list<const char*> parts) {
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message << " lacks " << part;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(OpsErrors, ConvMessagesNameTheBadArgument) {
  auto conv = [](Shape x, Shape w, Conv2dAttrs a) { return [=] { conv2d_nchw_workload(x, w, a); }; };
  expect_error(error_of(conv({1, 3, 7, 7}, {4, 2, 3, 3}, {})), {"conv2d_nchw", "input channels", "3", "2"});
  expect_error(error_of(conv({1, 3, 2, 2}, {4, 3, 3, 3}, {})), {"kernel height", "larger than the padded input"});
  expect_error(error_of(conv({1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs::symmetric(0, 1))), {"stride_h=0"});
  expect_error(error_of(conv({1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs::symmetric(1, -1))), {"pad_top=-1"});
  expect_error(error_of(conv({1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs::symmetric(1, 0, 0))), {"dilation_h=0"});
  expect_error(error_of(conv({3, 7, 7}, {4, 3, 3, 3}, {})), {"data", "rank 4", "[3, 7, 7]"});
  expect_error(error_of([] { depthwise_conv2d_nchw_workload({1, 4, 7, 7}, {3, 1, 3, 3}, {}); }),
               {"depthwise_conv2d_nchw", "channels", "4", "3"});
  expect_error(error_of([] { conv2d_nchwc_workload({1, 2, 7, 7, 4}, {2, 2, 3, 3, 2, 4}, {}); }), {"ic_bn"});
}

TEST(OpsErrors, RegistryMessagesNameTheBadArgument) {
  OpArgs a;
  a.input = {1, 6, 7, 7};
  a.weight = {8, 6, 3, 3};
  a.layout = "NCHWc";
  a.ic_bn = 4;
  expect_error(error_of([&] { make_workload("conv2d", a); }), {"not divisible by ic_bn=4"});
  a.ic_bn = 0;
  a.oc_bn = 3;
  expect_error(error_of([&] { make_workload("conv2d", a); }), {"not divisible by oc_bn=3"});
  a.layout = "NCWH";
  expect_error(error_of([&] { make_workload("conv2d", a); }), {"layout=NCWH"});
  a.layout = "NCHW";
  a.padding = {1, 2, 3};
  expect_error(error_of([&] { make_workload("conv2d", a); }), {"padding", "[1, 2, 3]"});
  expect_error(error_of([&] { make_workload("conv3d", a); }), {"unknown op 'conv3d'", "conv2d", "softmax", "dense"});

  OpArgs p;
  p.input = {1, 2, 7, 7};
  p.pool = 2;
  p.pad = 2;
  expect_error(error_of([&] { make_workload("max_pool", p); }), {"max_pool2d", "pad_top=2", "kernel (2)"});
  p.layout = "NHWC";
  expect_error(error_of([&] { make_workload("avg_pool", p); }), {"layout=NHWC"});
}

TEST(OpsErrors, OtherOpsRejectBadShapes) {
  expect_error(error_of([] { dense_workload({4, 5}, {3, 6}); }), {"dense", "K=5", "K=6"});
  expect_error(error_of([] { batch_matmul_workload({2, 4, 5}, {3, 6, 5}); }), {"batch_matmul", "B=2", "B=3"});
  expect_error(error_of([] { softmax_workload({7}); }), {"softmax", "rank >= 2"});
  expect_error(error_of([] { add_workload({2, 3}, {2, 4}); }), {"add", "[2, 3]", "[2, 4]", "broadcast"});
  expect_error(error_of([] { clip_workload({2, 3}, 6, 0); }), {"clip", "a_min=6"});
  expect_error(error_of([] { bias_add_workload({2, 3}, 2); }), {"bias_add", "axis 2"});
  expect_error(error_of([] { global_avg_pool2d_workload({2, 3, 4}); }), {"global_avg_pool2d", "rank 4"});
}

TEST(OpsRegistry, ListsEveryOpAndBuildsEach) {
  auto names = op_names();
  for (const char* op : {"conv2d", "depthwise_conv2d", "dense", "batch_matmul", "max_pool", "avg_pool",
                         "global_avg_pool", "softmax", "relu", "clip", "add", "multiply", "bias_add"})
    EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
}

}  // namespace
}  // namespace tessera::ops
