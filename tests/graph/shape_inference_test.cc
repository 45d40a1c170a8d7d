// Shape inference of every operator, and its errors: each names the node (in
// quotes, with its operator) and the shapes involved.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "graph_test_util.h"

namespace tessera::graph {
namespace {

using test::error_of;

struct Fixture {
  GraphBuilder b;
  NodeId in(const std::string& name, Shape shape) { return b.input(name, std::move(shape)); }
  NodeId w(const std::string& name, Shape shape) { return b.random_constant(name, std::move(shape), -1, 1); }
};

Conv2dAttrs nhwc(Conv2dAttrs a) {
  a.data_layout = "NHWC";
  a.kernel_layout = "HWIO";
  return a;
}

TEST(GraphShapes, Conv2dInBothLayoutsWithStridePaddingDilationAndGroups) {
  Fixture f;
  NodeId x = f.in("x", {1, 3, 10, 10});
  EXPECT_EQ(f.b.shape(f.b.conv2d(x, f.w("w", {8, 3, 3, 3}), Conv2dAttrs::symmetric(2, 1))), (Shape{1, 8, 5, 5}));
  NodeId xh = f.in("xh", {1, 10, 10, 3});
  EXPECT_EQ(f.b.shape(f.b.conv2d(xh, f.w("wh", {3, 3, 3, 8}), nhwc(Conv2dAttrs::symmetric(2, 1)))),
            (Shape{1, 5, 5, 8}));
  // Asymmetric padding with dilation 2: (12 + 0 + 1 - 5) + 1 = 9 rows, (12 + 2 + 1 - 5) + 1 = 11 columns.
  Conv2dAttrs a = Conv2dAttrs::symmetric(1, 0, 2);
  a.pad_top = 0, a.pad_left = 2, a.pad_bottom = 1, a.pad_right = 1;
  EXPECT_EQ(f.b.shape(f.b.conv2d(f.in("x2", {1, 4, 12, 12}), f.w("w2", {2, 4, 3, 3}), a)), (Shape{1, 2, 9, 11}));
  // Groups: the weight has C / groups input channels.
  NodeId g = f.b.conv2d(f.in("x3", {1, 8, 6, 6}), f.w("w3", {16, 2, 3, 3}), Conv2dAttrs::symmetric(1, 0, 1, 4), "g");
  EXPECT_EQ(f.b.shape(g), (Shape{1, 16, 4, 4}));
  EXPECT_FALSE(is_depthwise(f.b.graph(), f.b.graph().node(g)));
  NodeId dw = f.b.conv2d(f.in("x4", {1, 8, 6, 6}), f.w("w4", {8, 1, 3, 3}), Conv2dAttrs::symmetric(1, 1, 1, 8), "dw");
  EXPECT_EQ(f.b.shape(dw), (Shape{1, 8, 6, 6}));
  EXPECT_TRUE(is_depthwise(f.b.graph(), f.b.graph().node(dw)));
  NodeId dwh = f.b.conv2d(f.in("x5", {1, 6, 6, 8}), f.w("w5", {3, 3, 1, 8}), nhwc(Conv2dAttrs::symmetric(1, 1, 1, 8)));
  EXPECT_TRUE(is_depthwise(f.b.graph(), f.b.graph().node(dwh)));
}

TEST(GraphShapes, Conv2dErrorsNameTheNodeAndTheShapes) {
  Fixture f;
  NodeId x = f.in("x", {1, 64, 56, 56});
  NodeId w = f.w("w", {64, 32, 3, 3});
  EXPECT_EQ(error_of([&] { f.b.conv2d(x, w, Conv2dAttrs::symmetric(1, 1), "layer1.0.conv1"); }),
            "node 'layer1.0.conv1' (conv2d): weight [64, 32, 3, 3] expects 32 input channels, data [1, 64, 56, 56] "
            "has 64");
  EXPECT_EQ(error_of([&] { f.b.conv2d(x, w, Conv2dAttrs::symmetric(1, 1, 1, 4), "grouped"); }),
            "node 'grouped' (conv2d): weight [64, 32, 3, 3] expects 128 input channels (32 per group, groups=4), "
            "data [1, 64, 56, 56] has 64");
  EXPECT_EQ(error_of([&] {
              f.b.conv2d(x, f.w("w3", {64, 20, 3, 3}), Conv2dAttrs::symmetric(1, 1, 1, 3), "c");
            }),
            "node 'c' (conv2d): data [1, 64, 56, 56] has 64 channels, not a multiple of groups=3");
  const std::string big = error_of([&] { f.b.conv2d(f.in("s", {1, 64, 2, 2}), f.w("w5", {8, 64, 5, 5}), {}, "big"); });
  EXPECT_NE(big.find("node 'big' (conv2d): kernel height extent 5"), std::string::npos) << big;
  EXPECT_NE(big.find("larger than the padded input height 2"), std::string::npos) << big;
  Conv2dAttrs mixed;
  mixed.kernel_layout = "HWIO";
  EXPECT_NE(
      error_of([&] { f.b.conv2d(x, w, mixed, "m"); }).find("node 'm' (conv2d): data_layout NCHW with kernel_layout"),
      std::string::npos);
  EXPECT_NE(error_of([&] { f.b.conv2d(x, w, Conv2dAttrs::symmetric(0, 1), "z"); }).find("stride_h must be positive"),
            std::string::npos);
  EXPECT_EQ(error_of([&] {
              f.b.conv2d(f.in("r3", {1, 64, 56}), w, {}, "r");
            }),
            "node 'r' (conv2d): data (NCHW) must have rank 4, got [1, 64, 56]");
  // A failed node leaves the builder's graph as it was.
  EXPECT_FALSE(f.b.graph().find("layer1.0.conv1"));
}

TEST(GraphShapes, MatrixProducts) {
  Fixture f;
  EXPECT_EQ(f.b.shape(f.b.dense(f.in("x", {2, 512}), f.w("w", {1000, 512}))), (Shape{2, 1000}));
  EXPECT_EQ(error_of([&] {
              f.b.dense(f.in("x2", {1, 2048}), f.w("w2", {1000, 512}), "fc");
            }),
            "node 'fc' (dense): weight [1000, 512] expects 512 input features, data [1, 2048] has 2048");
  EXPECT_EQ(f.b.shape(f.b.matmul(f.in("a", {2, 3, 4}), f.w("b", {4, 5}))), (Shape{2, 3, 5}));
  EXPECT_EQ(error_of([&] {
              f.b.matmul(f.in("a2", {3, 4}), f.w("b2", {5, 4}), "mm");
            }),
            "node 'mm' (matmul): a [3, 4] has 4 columns, b [5, 4] has 5 rows");
  EXPECT_EQ(f.b.shape(f.b.batch_matmul(f.in("p", {2, 3, 4}), f.w("q", {2, 5, 4}))), (Shape{2, 3, 5}));
  EXPECT_NE(error_of([&] {
              f.b.batch_matmul(f.in("p2", {2, 3, 4}), f.w("q2", {3, 5, 4}), "bmm");
            }).find("node 'bmm' (batch_matmul): a [2, 3, 4] (B, M, K) and b [3, 5, 4]"),
            std::string::npos);
}

TEST(GraphShapes, NormalisationBiasAndElementwise) {
  Fixture f;
  NodeId x = f.in("x", {1, 4, 2, 2});
  NodeId c4 = f.w("c4", {4});
  EXPECT_EQ(f.b.shape(f.b.batch_norm(x, c4, c4, c4, c4, {})), (Shape{1, 4, 2, 2}));
  EXPECT_EQ(error_of([&] { f.b.batch_norm(x, f.w("c3", {3}), c4, c4, c4, {}, "bn"); }),
            "node 'bn' (batch_norm): gamma [3] does not match the 4 channels (axis 1) of data [1, 4, 2, 2]");
  EXPECT_EQ(f.b.shape(f.b.bias_add(x, f.w("b2", {2}), -1)), (Shape{1, 4, 2, 2}));
  EXPECT_EQ(error_of([&] { f.b.bias_add(x, f.w("b5", {5}), 1, "ba"); }),
            "node 'ba' (bias_add): bias [5] does not match axis 1 of data [1, 4, 2, 2]");
  EXPECT_EQ(error_of([&] { f.b.bias_add(x, c4, 4, "ba"); }), "node 'ba' (bias_add): axis 4 is out of range for rank 4");
  EXPECT_EQ(f.b.shape(f.b.add(x, f.w("k", {4, 1, 1}))), (Shape{1, 4, 2, 2}));
  EXPECT_EQ(f.b.shape(f.b.multiply(f.w("s", {3, 1}), f.w("t", {1, 5}))), (Shape{3, 5}));
  EXPECT_EQ(error_of([&] {
              f.b.add(x, f.w("k3", {3, 1, 1}), "sum");
            }),
            "node 'sum' (add): shapes [1, 4, 2, 2] and [3, 1, 1] do not broadcast (axis 1: 4 vs 3)");
  for (NodeId y : {f.b.relu(x), f.b.sigmoid(x), f.b.dropout(x, 0.5), f.b.clip(x, 0, 6)})
    EXPECT_EQ(f.b.shape(y), (Shape{1, 4, 2, 2}));
  EXPECT_NE(error_of([&] { f.b.clip(x, 6, 0, "clip6"); }).find("node 'clip6' (clip): min 6"), std::string::npos);
}

TEST(GraphShapes, PoolingFloorCeilLayoutsAndErrors) {
  Fixture f;
  Pool2dAttrs a = Pool2dAttrs::symmetric(3, 2, 1);
  EXPECT_EQ(f.b.shape(f.b.max_pool2d(f.in("x", {1, 64, 112, 112}), a)), (Shape{1, 64, 56, 56}));
  a.layout = "NHWC";
  EXPECT_EQ(f.b.shape(f.b.avg_pool2d(f.in("xh", {1, 112, 112, 64}), a)), (Shape{1, 56, 56, 64}));
  // (112 - 3) / 2 + 1: 55 rounded down, 56 with ceil_mode.
  Pool2dAttrs c = Pool2dAttrs::symmetric(3, 2, 0);
  NodeId y = f.in("y", {1, 8, 112, 112});
  EXPECT_EQ(f.b.shape(f.b.max_pool2d(y, c)), (Shape{1, 8, 55, 55}));
  c.ceil_mode = true;
  EXPECT_EQ(f.b.shape(f.b.max_pool2d(y, c)), (Shape{1, 8, 56, 56}));
  // In ceil mode a window must start inside the input: 5 + 1 with kernel 2, stride 2 gives 3, not 4.
  EXPECT_EQ(ops::pool_output_extent(5, 1, 1, 2, 2, true), 3);
  EXPECT_EQ(ops::pool_output_extent(5, 1, 1, 2, 2, false), 3);
  EXPECT_EQ(ops::pool_output_extent(6, 0, 0, 3, 2, true), 3);
  EXPECT_EQ(f.b.shape(f.b.global_avg_pool2d(y)), (Shape{1, 8, 1, 1}));
  EXPECT_EQ(f.b.shape(f.b.global_avg_pool2d(f.in("gh", {2, 7, 7, 16}), "NHWC")), (Shape{2, 1, 1, 16}));
  Pool2dAttrs wide = Pool2dAttrs::symmetric(2, 2, 2);
  EXPECT_EQ(error_of([&] { f.b.max_pool2d(y, wide, "pool"); }),
            "node 'pool' (max_pool2d): pad_top=2 must be smaller than the kernel 2");
  EXPECT_EQ(error_of([&] {
              f.b.avg_pool2d(f.in("t", {1, 1, 2, 2}), Pool2dAttrs::symmetric(3, 1), "tiny");
            }),
            "node 'tiny' (avg_pool2d): pool window [3, 3] is larger than the padded input [1, 1, 2, 2]");
  // Channel blocks (what convert_layout gives pools between convolutions):
  // the window moves over H and W of whole blocks.
  Pool2dAttrs blocked = a;
  blocked.layout = "NCHW8c";
  EXPECT_EQ(f.b.shape(f.b.max_pool2d(f.in("b8", {1, 2, 112, 112, 8}), blocked)), (Shape{1, 2, 56, 56, 8}));
  EXPECT_EQ(error_of([&] { f.b.max_pool2d(y, blocked, "p8"); }),
            "node 'p8' (max_pool2d): data (NCHW8c) must have rank 5, got [1, 8, 112, 112]");
  EXPECT_EQ(error_of([&] {
              f.b.max_pool2d(f.in("b4", {1, 2, 112, 112, 4}), blocked, "p4");
            }),
            "node 'p4' (max_pool2d): data [1, 2, 112, 112, 4] is not in layout NCHW8c");
  Pool2dAttrs odd = a;
  odd.layout = "NCWH";
  EXPECT_EQ(error_of([&] { f.b.max_pool2d(y, odd, "pw"); }),
            "node 'pw' (max_pool2d): layout NCWH is not supported (NCHW or NHWC)");
}

TEST(GraphShapes, ConcatReshapeFlattenTransposePadSoftmax) {
  Fixture f;
  NodeId a = f.in("a", {1, 2, 3, 3}), b = f.in("b", {1, 5, 3, 3});
  EXPECT_EQ(f.b.shape(f.b.concat({a, b}, 1)), (Shape{1, 7, 3, 3}));
  EXPECT_EQ(f.b.shape(f.b.concat({a, a, a}, -1)), (Shape{1, 2, 3, 9}));
  EXPECT_EQ(error_of([&] {
              f.b.concat({a, b}, 2, "cat");
            }),
            "node 'cat' (concat): input 1 [1, 5, 3, 3] does not match input 0 [1, 2, 3, 3] outside axis 2");
  NodeId x = f.in("x", {2, 3, 4});
  EXPECT_EQ(f.b.shape(f.b.reshape(x, {0, -1})), (Shape{2, 12}));
  EXPECT_EQ(f.b.shape(f.b.reshape(x, {4, -1, 2})), (Shape{4, 3, 2}));
  EXPECT_EQ(error_of([&] {
              f.b.reshape(x, {5, -1}, "r");
            }),
            "node 'r' (reshape): cannot reshape data [2, 3, 4] to [5, -1]");
  EXPECT_EQ(error_of([&] {
              f.b.reshape(x, {-1, -1}, "r");
            }),
            "node 'r' (reshape): newshape [-1, -1] has more than one -1");
  EXPECT_EQ(error_of([&] {
              f.b.reshape(x, {5, 5}, "r");
            }),
            "node 'r' (reshape): cannot reshape data [2, 3, 4] (24 elements) to [5, 5] (25)");
  NodeId y = f.in("y", {2, 3, 4, 5});
  EXPECT_EQ(f.b.shape(f.b.flatten(y)), (Shape{2, 60}));
  EXPECT_EQ(f.b.shape(f.b.flatten(y, 0)), (Shape{1, 120}));
  EXPECT_EQ(f.b.shape(f.b.flatten(y, 4)), (Shape{120, 1}));
  EXPECT_EQ(f.b.shape(f.b.transpose(y, {0, 2, 3, 1})), (Shape{2, 4, 5, 3}));
  EXPECT_EQ(f.b.shape(f.b.transpose(y, {})), (Shape{5, 4, 3, 2}));
  EXPECT_EQ(error_of([&] {
              f.b.transpose(y, {0, 1, 1, 2}, "t");
            }),
            "node 't' (transpose): perm [0, 1, 1, 2] is not a permutation of the axes of data [2, 3, 4, 5]");
  EXPECT_EQ(f.b.shape(f.b.pad(x, PadAttrs{{0, 1, 2}, {1, 0, 3}, 0.f})), (Shape{3, 4, 9}));
  EXPECT_EQ(error_of([&] {
              f.b.pad(x, PadAttrs{{0, 1}, {1, 0}, 0.f}, "p");
            }),
            "node 'p' (pad): before [0, 1] and after [1, 0] must have one entry per axis of data [2, 3, 4]");
  EXPECT_EQ(f.b.shape(f.b.softmax(x, 1)), (Shape{2, 3, 4}));
  EXPECT_EQ(error_of([&] { f.b.softmax(x, 3, "sm"); }), "node 'sm' (softmax): axis 3 is out of range for rank 3");
}

TEST(GraphShapes, LayoutTransform) {
  Fixture f;
  NodeId x = f.in("x", {1, 16, 5, 7});
  NodeId packed = f.b.layout_transform(x, "NCHW", "NCHW8c");
  EXPECT_EQ(f.b.shape(packed), (Shape{1, 2, 5, 7, 8}));
  EXPECT_EQ(f.b.shape(f.b.layout_transform(packed, "NCHW8c", "NHWC")), (Shape{1, 5, 7, 16}));
  EXPECT_EQ(f.b.shape(f.b.layout_transform(packed, "NCHW8c", "NCHW4c")), (Shape{1, 4, 5, 7, 4}));
  EXPECT_EQ(error_of([&] {
              f.b.layout_transform(f.in("y", {1, 12, 5, 5}), "NCHW", "NCHW8c", "lt");
            }),
            "node 'lt' (layout_transform): layout NCHW8c: axis C of extent 12 is not a multiple of its block 8");
  EXPECT_EQ(error_of([&] { f.b.layout_transform(x, "NCHW", "NCHWc", "lt"); }),
            "node 'lt' (layout_transform): layout 'NCHWc': unexpected character 'c'");
  EXPECT_EQ(error_of([&] { f.b.layout_transform(x, "NCHW", "NCH", "lt"); }),
            "node 'lt' (layout_transform): layouts NCHW and NCH do not have the same axes");
  EXPECT_EQ(error_of([&] { f.b.layout_transform(packed, "NCHW4c", "NCHW", "lt"); }),
            "node 'lt' (layout_transform): shape [1, 2, 5, 7, 8] does not fit layout NCHW4c: axis 4 has extent 8, "
            "the block is 4");
}

TEST(GraphShapes, InputsArityAndWholeGraphReinference) {
  Fixture f;
  EXPECT_EQ(error_of([&] {
              f.in("bad", {1, 0, 3});
            }),
            "node 'bad' (input): shape [1, 0, 3] has a non-positive dimension");
  NodeId x = f.in("x", {1, 3, 8, 8});
  EXPECT_EQ(error_of([&] { f.b.add_node(Op::kAdd, "a", {x}); }), "node 'a' (add): expects 2 inputs, got 1");
  EXPECT_EQ(error_of([&] { f.b.add_node(Op::kConcat, "c", {}, ConcatAttrs{}); }),
            "node 'c' (concat): expects at least one input, got 0");
  EXPECT_EQ(error_of([&] {
              f.b.add_node(Op::kConv2d, "k", {x, x}, NoAttrs{});
            }),
            "node 'k' (conv2d): attributes are NoAttrs, expected Conv2dAttrs");
  NodeId y = f.b.conv2d(x, f.w("w", {4, 3, 3, 3}), Conv2dAttrs::symmetric(1, 1), "conv");
  Graph g = f.b.finish({f.b.relu(y, "relu")});
  // Edited attributes are re-inferred through the whole graph.
  Conv2dAttrs edited = g.node(y).attrs_as<Conv2dAttrs>();
  edited.stride_h = 2;
  g.mutable_node(y).attrs = edited;
  infer_shapes(g);
  EXPECT_EQ(g.node(*g.find("relu")).type.shape, (Shape{1, 4, 4, 8}));
  edited.groups = 2;
  g.mutable_node(y).attrs = edited;
  EXPECT_EQ(error_of([&] { infer_shapes(g); }),
            "node 'conv' (conv2d): data [1, 3, 8, 8] has 3 channels, not a multiple of groups=2");
}

}  // namespace
}  // namespace tessera::graph
