// The graph container, the builder's naming, operator names, layouts and the printer.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "ops/tensor_layout.h"
#include "graph/printer.h"
#include "graph_test_util.h"

namespace tessera::graph {
namespace {

using ops::Layout;
using test::error_of;

TEST(GraphIr, OperatorNamesRoundTrip) {
  for (Op op : all_ops()) EXPECT_EQ(op_from_name(op_name(op)), op);
  const std::string e = error_of([] { op_from_name("conv_2d"); });
  // The message lists the known names sorted: the near miss is there to read.
  EXPECT_NE(e.find("unknown operator 'conv_2d' (known: abs, add, "), std::string::npos) << e;
  EXPECT_NE(e.find(", conv2d, conv2d_packed, conv3d, dense,"), std::string::npos) << e;
  // The graph's named kinds are all registered operators.
  for (Op op : {Op::kInput, Op::kConstant, Op::kConv2d, Op::kDense, Op::kMatmul, Op::kBatchMatmul, Op::kBatchNorm,
                Op::kBiasAdd, Op::kAdd, Op::kMultiply, Op::kRelu, Op::kClip, Op::kSigmoid, Op::kMaxPool2d,
                Op::kAvgPool2d, Op::kGlobalAvgPool2d, Op::kConcat, Op::kReshape, Op::kFlatten, Op::kTranspose, Op::kPad,
                Op::kSoftmax, Op::kDropout, Op::kLayoutTransform})
    EXPECT_EQ(Op::named(op.name()), op);
}

TEST(GraphIr, ABuilderUsedAfterFinishSaysWhyAnIdIsUnknown) {
  GraphBuilder b;
  NodeId x = b.input("x", {1, 4});
  NodeId y = b.relu(x, "relu");
  b.finish({y});
  const std::string e = error_of([&] { b.relu(y, "again"); });
  EXPECT_EQ(e, "GraphBuilder: relu 'again' reads node id 1, which this builder does not have (0 nodes; ids from "
               "before finish() belong to the finished graph)");
  // The builder itself can make a new graph.
  NodeId z = b.input("z", {2});
  EXPECT_EQ(b.finish({b.relu(z, "r")}).size(), 2u);
}

TEST(GraphIr, NodesAreTopologicalAndNamesUnique) {
  Graph g;
  Node in;
  in.name = "x";
  in.op = Op::kInput;
  in.type.shape = {2};
  EXPECT_EQ(g.add(in), 0);
  Node relu;
  relu.name = "r";
  relu.op = Op::kRelu;
  relu.inputs = {1};  // itself: not an earlier node
  EXPECT_EQ(error_of([&] { g.add(relu); }),
            "node 'r' (relu): input id 1 is not an earlier node (graphs are in topological order)");
  relu.inputs = {0};
  EXPECT_EQ(g.add(relu), 1);
  EXPECT_EQ(error_of([&] { g.add(relu); }), "node 'r' (relu): the name is already taken by another node");
  Node c;
  c.name = "w";
  c.op = Op::kConstant;
  EXPECT_EQ(error_of([&] { g.add(c); }), "node 'w' (constant): a constant without a value");
  EXPECT_EQ(error_of([&] { g.node(7); }), "graph: no node with id 7 (2 nodes)");
  EXPECT_EQ(*g.find("r"), 1);
  EXPECT_FALSE(g.find("nothing"));
}

TEST(GraphIr, BuilderMakesNamesUniqueAndSeedsConstantsByName) {
  GraphBuilder b(7);
  NodeId x = b.input("data", {1, 4});
  NodeId r1 = b.relu(x, "relu"), r2 = b.relu(r1, "relu"), r3 = b.relu(r2);
  EXPECT_EQ(b.graph().node(r2).name, "relu_1");
  EXPECT_EQ(b.graph().node(r3).name, "relu_2");  // an empty name is the operator's
  NodeId w1 = b.random_constant("w", {3}, -1, 1);
  GraphBuilder other(7);
  other.random_constant("unrelated", {5}, -1, 1);
  NodeId w2 = other.random_constant("w", {3}, -1, 1);
  EXPECT_EQ(test::values(*b.graph().node(w1).value), test::values(*other.graph().node(w2).value));
  // Another seed, other values.
  EXPECT_NE(test::values(*b.graph().node(w1).value), test::values(GraphBuilder(8).random_array("w", {3}, -1, 1)));
  EXPECT_EQ(error_of([&] { b.finish({}); }), "graph: finished without outputs");
  Graph g = b.finish({r3});
  EXPECT_EQ(g.input_ids(), std::vector<NodeId>{x});
  EXPECT_EQ(b.graph().size(), 0u);  // the builder starts over
}

TEST(GraphIr, CountParametersLeavesOutRunningStatistics) {
  GraphBuilder b;
  NodeId x = b.input("x", {1, 4, 2, 2});
  NodeId c = b.random_constant("c", {4}, 0.5, 1);
  NodeId y = b.batch_norm(x, c, b.random_constant("beta", {4}, 0, 1), b.random_constant("m", {4}, 0, 1),
                          b.random_constant("v", {4}, 0.5, 1), {});
  y = b.add(y, b.random_constant("k", {4, 1, 1}, 0, 1));
  EXPECT_EQ(count_parameters(b.finish({y})), 4 + 4 + 4);
}

TEST(GraphLayout, ParsesPrimalAndBlockedAxes) {
  Layout l = Layout::parse("NCHW16c");
  EXPECT_EQ(l.rank(), 5u);
  EXPECT_EQ(l.primal_position('C'), 1);
  EXPECT_EQ(l.block_of('C'), 16);
  EXPECT_EQ(l.block_of('H'), 1);
  EXPECT_EQ(l.primal_letters(), "CHNW");
  EXPECT_EQ(error_of([] { Layout::parse("NCHC"); }), "layout 'NCHC': axis C appears twice");
  EXPECT_EQ(error_of([] { Layout::parse("N8cCHW"); }), "layout 'N8cCHW': block c comes before (or without) its axis C");
  EXPECT_EQ(error_of([] { Layout::parse("NCHW0c"); }), "layout 'NCHW0c': block size must be positive");
  EXPECT_EQ(error_of([] { Layout::parse("NCHW8"); }),
            "layout 'NCHW8': a block size must be followed by a lower-case axis");
  EXPECT_EQ(error_of([] { Layout::parse(""); }), "layout '': empty");
}

TEST(GraphPrinter, ShowsNameOpAttributesInputsAndType) {
  GraphBuilder b;
  NodeId x = b.input("data", {1, 3, 8, 8});
  NodeId w = b.random_constant("conv.weight", {4, 3, 3, 3}, -1, 1);
  NodeId y = b.clip(b.conv2d(x, w, Conv2dAttrs::symmetric(2, 1), "conv"), 0, 6, "relu6");
  const std::string text = print_graph(b.finish({y}));
  EXPECT_EQ(text,
            "graph: 4 nodes, 1 input, 1 constant (108 parameters)\n"
            "  %data = input -> float32[1, 3, 8, 8]\n"
            "  %conv.weight = constant -> float32[4, 3, 3, 3]\n"
            "  %conv = conv2d(%data, %conv.weight) strides=[2, 2] padding=[1, 1, 1, 1] dilation=[1, 1] groups=1 "
            "data_layout=NCHW kernel_layout=OIHW -> float32[1, 4, 4, 4]\n"
            "  %relu6 = clip(%conv) min=0 max=6 -> float32[1, 4, 4, 4]\n"
            "outputs: %relu6\n");
}

}  // namespace
}  // namespace tessera::graph
