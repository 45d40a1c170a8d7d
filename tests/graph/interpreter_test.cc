// The interpreter per operator, against hand-computed values or against an
// independent formulation (the ops references, per-group slices, transposes).
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph_test_util.h"
#include "ops/layout.h"
#include "ops/reference.h"

namespace tessera::graph {
namespace {

using test::array;
using test::error_of;
using test::max_relative_error;
using test::random_array;
using test::values;

// Runs a one-output graph on `inputs`.
std::vector<float> run(GraphBuilder& b, NodeId out, std::vector<runtime::NDArray> inputs) {
  Graph g = b.finish({out});
  return values(interpret(g, inputs).at(0));
}

std::shared_ptr<const runtime::NDArray> shared(runtime::NDArray a) {
  return std::make_shared<const runtime::NDArray>(std::move(a));
}

ops::Conv2dAttrs to_ops(const Conv2dAttrs& a) {
  ops::Conv2dAttrs o;
  o.stride_h = a.stride_h, o.stride_w = a.stride_w, o.dilation_h = a.dilation_h, o.dilation_w = a.dilation_w;
  o.pad_top = a.pad_top, o.pad_left = a.pad_left, o.pad_bottom = a.pad_bottom, o.pad_right = a.pad_right;
  return o;
}

Conv2dAttrs asymmetric(int64_t stride, int64_t dilation, int64_t groups) {
  Conv2dAttrs a = Conv2dAttrs::symmetric(stride, 0, dilation, groups);
  a.pad_top = 1, a.pad_left = 2, a.pad_bottom = 0, a.pad_right = 1;
  return a;
}

TEST(Interpret, Conv2dEqualsTheOpsReference) {
  const Shape ds{2, 3, 9, 8}, ws{5, 3, 3, 2};
  const Conv2dAttrs a = asymmetric(2, 2, 1);
  auto x = random_array(ds, 1);
  auto w = shared(random_array(ws, 2));
  GraphBuilder b;
  NodeId y = b.conv2d(b.input("x", ds), b.constant("w", w), a);
  const Shape os = b.shape(y);
  std::vector<float> want(ops::num_elements(os));
  ops::reference::conv2d_nchw(x.data(), ds, w->data(), ws, to_ops(a), want.data());
  std::vector<runtime::NDArray> in;
  in.push_back(std::move(x));
  EXPECT_LT(max_relative_error(run(b, y, std::move(in)), want), 1e-6);
}

// A grouped convolution is the concatenation (on channels) of each group's
// ordinary convolution of its slice of input channels with its slice of filters.
TEST(Interpret, GroupedConvIsTheConcatenationOfPerGroupConvs) {
  for (int64_t groups : {2, 4}) {
    const int64_t C = 8, O = 12, N = 2, H = 7, W = 6;
    const Shape ds{N, C, H, W}, ws{O, C / groups, 3, 3};
    const Conv2dAttrs a = asymmetric(1, 1, groups);
    auto x = random_array(ds, 3);
    auto w = shared(random_array(ws, 4));
    GraphBuilder b;
    NodeId y = b.conv2d(b.input("x", ds), b.constant("w", w), a);
    const Shape os = b.shape(y);
    std::vector<float> want(ops::num_elements(os));
    const int64_t cg = C / groups, og = O / groups, plane = H * W, out_plane = os[2] * os[3];
    for (int64_t g = 0; g < groups; ++g) {
      std::vector<float> xs(N * cg * plane), out(N * og * out_plane);
      for (int64_t n = 0; n < N; ++n)
        std::copy_n(x.data() + (n * C + g * cg) * plane, cg * plane, xs.data() + n * cg * plane);
      const float* wg = w->data() + g * og * cg * 9;  // filters of group g are contiguous in OIHW
      ops::reference::conv2d_nchw(xs.data(), {N, cg, H, W}, wg, {og, cg, 3, 3}, to_ops(a), out.data());
      for (int64_t n = 0; n < N; ++n)
        std::copy_n(out.data() + n * og * out_plane, og * out_plane, want.data() + (n * O + g * og) * out_plane);
    }
    std::vector<runtime::NDArray> in;
    in.push_back(std::move(x));
    EXPECT_LT(max_relative_error(run(b, y, std::move(in)), want), 1e-6) << "groups=" << groups;
  }
}

TEST(Interpret, DepthwiseConvEqualsTheDepthwiseReference) {
  const Shape ds{1, 6, 10, 9}, ws{6, 1, 3, 3};
  const Conv2dAttrs a = asymmetric(2, 1, 6);
  auto x = random_array(ds, 5);
  auto w = shared(random_array(ws, 6));
  GraphBuilder b;
  NodeId y = b.conv2d(b.input("x", ds), b.constant("w", w), a);
  std::vector<float> want(ops::num_elements(b.shape(y)));
  ops::reference::depthwise_conv2d_nchw(x.data(), ds, w->data(), ws, to_ops(a), want.data());
  std::vector<runtime::NDArray> in;
  in.push_back(std::move(x));
  EXPECT_LT(max_relative_error(run(b, y, std::move(in)), want), 1e-6);
}

// NHWC / HWIO is the same convolution on transposed tensors, for every group count.
TEST(Interpret, NhwcConvIsTheTransposedNchwConv) {
  for (int64_t groups : {1, 3, 6}) {
    const Shape ds{2, 6, 8, 7}, ws{6, 6 / groups, 3, 2};
    Conv2dAttrs a = asymmetric(2, 1, groups);
    auto x = random_array(ds, 7);
    auto w = random_array(ws, 8);
    auto x_nhwc = array({2, 8, 7, 6}, ops::nchw_to_nhwc(x.data(), ds));
    runtime::NDArray w_hwio({3, 2, 6 / groups, 6});
    ops::reference::transpose(w.data(), ws, {2, 3, 1, 0}, w_hwio.data());

    GraphBuilder b;
    NodeId y = b.conv2d(b.input("x", ds), b.constant("w", std::move(w)), a);
    std::vector<runtime::NDArray> in;
    in.push_back(std::move(x));
    const Shape os = b.shape(y);
    std::vector<float> nchw = run(b, y, std::move(in));

    Conv2dAttrs ah = a;
    ah.data_layout = "NHWC", ah.kernel_layout = "HWIO";
    NodeId yh = b.conv2d(b.input("x", x_nhwc.shape()), b.constant("w", std::move(w_hwio)), ah);
    in.clear();
    in.push_back(std::move(x_nhwc));
    std::vector<float> nhwc = run(b, yh, std::move(in));
    EXPECT_LT(max_relative_error(nhwc, ops::nchw_to_nhwc(nchw.data(), os)), 1e-6) << "groups=" << groups;
  }
}

TEST(Interpret, PoolingByHandAndNhwcAsTransposedNchw) {
  // 3x3 image 0..8, 2x2 windows, stride 2, ceil_mode: the partial windows count.
  Pool2dAttrs a = Pool2dAttrs::symmetric(2, 2, 0);
  a.ceil_mode = true;
  GraphBuilder b;
  NodeId y = b.max_pool2d(b.input("x", {1, 1, 3, 3}), a);
  std::vector<runtime::NDArray> in;
  in.push_back(array({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(run(b, y, std::move(in)), (std::vector<float>{4, 5, 7, 8}));
  // Averages over the same windows (padding not counted): (0+1+3+4)/4, (2+5)/2, (6+7)/2, 8.
  y = b.avg_pool2d(b.input("x", {1, 1, 3, 3}), a);
  in.push_back(array({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(run(b, y, std::move(in)), (std::vector<float>{2, 3.5, 6.5, 8}));
  // count_include_pad: the corner window of a 3x3 kernel with padding 1 sees 4 of 9.
  Pool2dAttrs p = Pool2dAttrs::symmetric(3, 2, 1);
  p.count_include_pad = true;
  y = b.avg_pool2d(b.input("x", {1, 1, 3, 3}), p);
  in.push_back(array({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(run(b, y, std::move(in))[0], (0 + 1 + 3 + 4) / 9.0f);

  for (Op op : {Op::kMaxPool2d, Op::kAvgPool2d, Op::kGlobalAvgPool2d}) {
    for (bool ceil : {false, true}) {
      const Shape ds{2, 3, 9, 8};
      Pool2dAttrs pa = Pool2dAttrs::symmetric(3, 2, 1);
      pa.ceil_mode = ceil;
      pa.count_include_pad = !ceil && op == Op::kAvgPool2d;
      auto x = random_array(ds, 9);
      auto xh = array({2, 9, 8, 3}, ops::nchw_to_nhwc(x.data(), ds));
      const Attrs attrs = op == Op::kGlobalAvgPool2d ? Attrs(GlobalPoolAttrs{}) : Attrs(pa);
      NodeId y1 = b.add_node(op, "pool", {b.input("x", ds)}, attrs);
      const Shape os = b.shape(y1);
      std::vector<runtime::NDArray> one;
      one.push_back(std::move(x));
      std::vector<float> nchw = run(b, y1, std::move(one));
      if (!ceil && op != Op::kGlobalAvgPool2d) {  // the ops references take the same windows
        std::vector<float> want(nchw.size());
        auto xa = random_array(ds, 9);
        ops::Pool2dAttrs o = pa;
        o.pad_top = o.pad_left = o.pad_bottom = o.pad_right = 1;
        (op == Op::kMaxPool2d ? ops::reference::max_pool2d : ops::reference::avg_pool2d)(xa.data(), ds, o, want.data());
        EXPECT_LT(max_relative_error(nchw, want), 1e-6);
      }
      Attrs attrs_h = attrs;
      if (auto* g = attrs.get_if<GlobalPoolAttrs>()) attrs_h = GlobalPoolAttrs{"NHWC"};
      if (auto* q = attrs.get_if<Pool2dAttrs>()) {
        Pool2dAttrs h = *q;
        h.layout = "NHWC";
        attrs_h = h;
      }
      NodeId y2 = b.add_node(op, "pool", {b.input("x", xh.shape())}, attrs_h);
      one.push_back(std::move(xh));
      std::vector<float> nhwc = run(b, y2, std::move(one));
      EXPECT_LT(max_relative_error(nhwc, ops::nchw_to_nhwc(nchw.data(), os)), 1e-6) << op_name(op) << " ceil=" << ceil;
    }
  }
}

TEST(Interpret, BatchNormIsItsFormula) {
  GraphBuilder b;
  auto vec = [&](const std::string& name, std::vector<float> v) { return b.constant(name, array({2}, v)); };
  NodeId y = b.batch_norm(b.input("x", {1, 2, 1, 2}), vec("gamma", {2, 0.5}), vec("beta", {1, -1}), vec("mean", {1, 2}),
                          vec("var", {3.99, 0.24}), BatchNormAttrs{0.01, 1});
  std::vector<runtime::NDArray> in;
  in.push_back(array({1, 2, 1, 2}, {1, 3, 2, 4}));
  // channel 0: (x - 1) / 2 * 2 + 1; channel 1: (x - 2) / 0.5 * 0.5 - 1.
  std::vector<float> got = run(b, y, std::move(in)), want = {1, 3, -1, 1};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Interpret, MatrixProductsByHand) {
  GraphBuilder b;
  // dense: x (1, 2) . W (3, 2)^T
  NodeId d = b.dense(b.input("x", {1, 2}), b.constant("w", array({3, 2}, {1, 0, 0, 1, 1, 1})));
  std::vector<runtime::NDArray> in;
  in.push_back(array({1, 2}, {2, 5}));
  EXPECT_EQ(run(b, d, std::move(in)), (std::vector<float>{2, 5, 7}));
  // matmul: a (1, 2, 2) . b (2, 3), b not transposed
  NodeId m = b.matmul(b.input("a", {1, 2, 2}), b.constant("b", array({2, 3}, {1, 2, 3, 4, 5, 6})));
  in.push_back(array({1, 2, 2}, {1, 0, 1, 1}));
  EXPECT_EQ(run(b, m, std::move(in)), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  // batch_matmul: a (2, 1, 2) . b (2, 1, 2)^T per batch
  NodeId bm = b.batch_matmul(b.input("a", {2, 1, 2}), b.constant("b", array({2, 1, 2}, {1, 1, 2, -1})));
  in.push_back(array({2, 1, 2}, {3, 4, 3, 4}));
  EXPECT_EQ(run(b, bm, std::move(in)), (std::vector<float>{7, 2}));
}

TEST(Interpret, ElementwiseByHand) {
  GraphBuilder b;
  auto x = [] { return array({1, 2, 1, 2}, {-1, 2, 7, std::log(3.0f)}); };
  auto one = [&](NodeId y) {
    std::vector<runtime::NDArray> in;
    in.push_back(x());
    return run(b, y, std::move(in));
  };
  EXPECT_EQ(one(b.relu(b.input("x", {1, 2, 1, 2}))), (std::vector<float>{0, 2, 7, std::log(3.0f)}));
  EXPECT_EQ(one(b.clip(b.input("x", {1, 2, 1, 2}), 0, 6)), (std::vector<float>{0, 2, 6, std::log(3.0f)}));
  std::vector<float> s = one(b.sigmoid(b.input("x", {1, 2, 1, 2})));
  EXPECT_NEAR(s[3], 0.75f, 1e-6);  // 1 / (1 + 1/3)
  EXPECT_NEAR(s[0], 1 / (1 + std::exp(1.0)), 1e-6);
  EXPECT_EQ(one(b.dropout(b.input("x", {1, 2, 1, 2}), 0.5)), values(x()));
  NodeId bias = b.bias_add(b.input("x", {1, 2, 1, 2}), b.constant("b", array({2}, {10, 20})), 1);
  EXPECT_EQ(one(bias), (std::vector<float>{9, 12, 27, 20 + std::log(3.0f)}));
  NodeId sum = b.add(b.input("x", {1, 2, 1, 2}), b.constant("k", array({2, 1, 1}, {1, 2})));
  EXPECT_EQ(one(sum), (std::vector<float>{0, 3, 9, 2 + std::log(3.0f)}));
  NodeId prod = b.multiply(b.input("x", {1, 2, 1, 2}), b.constant("k", array({2}, {2, 3})));
  EXPECT_EQ(one(prod), (std::vector<float>{-2, 6, 14, 3 * std::log(3.0f)}));
}

TEST(Interpret, DataMovementByHand) {
  GraphBuilder b;
  auto in23 = [] { return array({2, 3}, {0, 1, 2, 3, 4, 5}); };
  auto one = [&](NodeId y) {
    std::vector<runtime::NDArray> in;
    in.push_back(in23());
    return run(b, y, std::move(in));
  };
  NodeId x = b.input("x", {2, 3});
  EXPECT_EQ(one(b.concat({x, b.constant("c", array({2, 1}, {9, 8}))}, 1)),
            (std::vector<float>{0, 1, 2, 9, 3, 4, 5, 8}));
  x = b.input("x", {2, 3});
  EXPECT_EQ(one(b.concat({x, x}, 0)), (std::vector<float>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(one(b.transpose(b.input("x", {2, 3}), {1, 0})), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(one(b.reshape(b.input("x", {2, 3}), {3, -1})), values(in23()));
  EXPECT_EQ(one(b.flatten(b.input("x", {2, 3}), 0)), values(in23()));
  EXPECT_EQ(one(b.pad(b.input("x", {2, 3}), PadAttrs{{0, 1}, {1, 0}, -1.f})),
            (std::vector<float>{-1, 0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1}));
  // softmax over axis 0 of columns (0, 3): e^0 / (e^0 + e^3), ...
  std::vector<float> s = one(b.softmax(b.input("x", {2, 3}), 0));
  const float low = float(1 / (1 + std::exp(3.0)));
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(s[j], low, 1e-6);
    EXPECT_NEAR(s[3 + j], 1 - low, 1e-6);
  }
  std::vector<float> last = one(b.softmax(b.input("x", {2, 3}), -1));
  EXPECT_NEAR(last[0] + last[1] + last[2], 1.0, 1e-6);
  EXPECT_NEAR(last[2] / last[1], std::exp(1.0), 1e-5);
}

TEST(Interpret, LayoutTransformsMatchTheOpsPackersAndRoundTrip) {
  const Shape ds{2, 8, 3, 5};
  auto x = random_array(ds, 11);
  const std::vector<float> original = values(x);
  GraphBuilder b;
  NodeId in = b.input("x", ds);
  NodeId c4 = b.layout_transform(in, "NCHW", "NCHW4c");
  NodeId c2 = b.layout_transform(c4, "NCHW4c", "NCHW2c");
  NodeId hwc = b.layout_transform(c2, "NCHW2c", "NHWC");
  NodeId back = b.layout_transform(hwc, "NHWC", "NCHW");
  Graph g = b.finish({c4, hwc, back});
  std::vector<runtime::NDArray> inputs;
  inputs.push_back(std::move(x));
  auto out = interpret(g, inputs);
  EXPECT_EQ(values(out[0]), ops::pack_nchw_to_nchwc(original.data(), ds, 4));
  EXPECT_EQ(values(out[1]), ops::nchw_to_nhwc(original.data(), ds));
  EXPECT_EQ(values(out[2]), original);
}

TEST(Interpret, InputsByNameAndTheirErrors) {
  GraphBuilder b;
  NodeId a = b.input("a", {2});
  NodeId y = b.add(a, b.input("b", {2}), "sum");
  Graph g = b.finish({y});
  std::map<std::string, runtime::NDArray> named;
  named.emplace("b", array({2}, {10, 20}));
  named.emplace("a", array({2}, {1, 2}));
  EXPECT_EQ(values(interpret(g, named).at(0)), (std::vector<float>{11, 22}));
  named.emplace("c", array({2}, {0, 0}));
  EXPECT_EQ(error_of([&] { interpret(g, named); }), "interpret: 'c' is not an input of the graph");
  named.erase("c");
  named.erase("a");
  EXPECT_EQ(error_of([&] { interpret(g, named); }), "interpret: no value given for input 'a'");
  std::vector<runtime::NDArray> wrong;
  wrong.push_back(array({3}, {1, 2, 3}));
  EXPECT_EQ(error_of([&] { interpret(g, wrong); }), "interpret: the graph has 2 inputs, 1 given");
  wrong.push_back(array({2}, {1, 2}));
  EXPECT_EQ(error_of([&] { interpret(g, wrong); }), "interpret: input 'a' expects shape [2], got [3]");
}

}  // namespace
}  // namespace tessera::graph
