// hard_swish, the operator added as one file (src/ops/hard_swish.cc): its
// definition, reference against the formula, fusion into a convolution's
// kernel, the ONNX mapping, and `tessera op` declaring it from the registry.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "compile/build.h"
#include "target/target.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/onnx_import.h"
#include "ops/operator.h"
#include "ops/registry.h"
#include "ops_test_util.h"
#include "runtime/graph_executor.h"

namespace tessera::ops {
namespace {

// torch.nn.Hardswish's definition, in double.
float formula(float x) { return static_cast<float>(x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0); }

// One input for interpret(), a copy of x.
std::vector<runtime::NDArray> inputs_of(const runtime::NDArray& x) {
  std::vector<runtime::NDArray> in;
  in.emplace_back(x.shape());
  std::copy(x.data(), x.data() + x.size(), in[0].data());
  return in;
}

std::vector<float> values(const runtime::NDArray& a) { return std::vector<float>(a.data(), a.data() + a.size()); }

std::vector<float> run_compiled(const graph::Graph& g, const runtime::NDArray& x) {
  build::BuildResult built = build::build(g, target::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), "hard_swish");
  ex.set_input(0, x);
  ex.run();
  const runtime::NDArray& y = ex.get_output(0);
  return std::vector<float>(y.data(), y.data() + y.size());
}

TEST(HardSwish, IsAnElementwiseOperatorOfTheRegistry) {
  const Operator& op = find_operator("hard_swish");
  EXPECT_EQ(op.num_inputs, 1);
  EXPECT_EQ(op.pattern, FusionPattern::kElementwise);
  EXPECT_EQ(op.infer_shape({{2, 3, 5}}, Attrs{}), (Shape{2, 3, 5}));
  EXPECT_EQ(graph::Op::named("hard_swish").name(), "hard_swish");
}

TEST(HardSwish, ReferenceFollowsTheFormulaAtItsBreakpointsAndKeepsNaN) {
  const std::vector<float> x = {-4.0f, -3.0f, -1.5f, 0.0f, 1.5f, 3.0f, 4.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::vector<float> want = {0.0f, 0.0f, -0.375f, 0.0f, 1.125f, 3.0f, 4.0f};
  std::vector<float> y(x.size());
  const Shape shape{static_cast<int64_t>(x.size())};
  const Operator& op = find_operator("hard_swish");
  op.reference(OperatorCall{op.default_attrs, {shape}, shape, {false}}, {x.data()}, y.data());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << "x = " << x[i];
  EXPECT_TRUE(std::isnan(y.back()));
}

TEST(HardSwish, FusesIntoTheConvolutionKernelAndMatchesTheInterpreter) {
  graph::GraphBuilder b(3);
  graph::NodeId x = b.input("x", {1, 8, 12, 12});
  graph::NodeId y = b.conv2d(x, b.random_constant("w", {16, 8, 3, 3}, -0.5f, 0.5f), Conv2dAttrs::symmetric(1, 1),
                             "conv");
  y = b.bias_add(y, b.random_constant("b", {16}, -1.0f, 1.0f), 1, "bias");
  y = b.add_node(graph::Op::named("hard_swish"), "act", {y});
  const graph::Graph g = b.finish({y});

  runtime::NDArray input({1, 8, 12, 12});
  const std::vector<float> data = test::random_data(input.size(), 7);
  std::copy(data.begin(), data.end(), input.data());
  // The interpreter's hard_swish against the formula applied to its conv + bias.
  graph::GraphBuilder pre(3);
  graph::NodeId px = pre.input("x", {1, 8, 12, 12});
  graph::NodeId py = pre.conv2d(px, pre.random_constant("w", {16, 8, 3, 3}, -0.5f, 0.5f),
                                Conv2dAttrs::symmetric(1, 1), "conv");
  py = pre.bias_add(py, pre.random_constant("b", {16}, -1.0f, 1.0f), 1, "bias");
  const std::vector<float> before = values(graph::interpret(pre.finish({py}), inputs_of(input)).at(0));
  const std::vector<float> interpreted = values(graph::interpret(g, inputs_of(input)).at(0));
  int active = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_NEAR(interpreted[i], formula(before[i]), 1e-5) << i;
    active += before[i] > -3 && before[i] < 3;  // the parabola, not only the flat parts
  }
  EXPECT_GT(active, static_cast<int>(before.size() / 4));

  const build::BuildResult built = build::build(g, target::Target::host(), {.compile = false});
  bool fused = false;
  for (const build::KernelSummary& k : built.kernels) fused |= k.nodes.find("conv") != std::string::npos &&
                                                               k.nodes.find("act") != std::string::npos;
  EXPECT_TRUE(fused) << "hard_swish has a kernel of its own";
  const std::vector<float> compiled = run_compiled(g, input);
  EXPECT_LT(test::max_relative_error(compiled, interpreted), 1e-5);
}

TEST(HardSwish, OnnxHardSwishImportsAsIt) {
  // The narrow ResNet-18 with its first Relu made a HardSwish (opset 14).
  onnx::ModelProto m;
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/resnet18_narrow.onnx", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  ASSERT_TRUE(m.ParseFromString(bytes.str()));
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "Relu") {
      n.set_op_type("HardSwish");
      break;
    }
  for (auto& opset : *m.mutable_opset_import())
    if (opset.domain().empty() && opset.version() < 14) opset.set_version(14);
  const std::string path = "/tmp/tessera-hard-swish-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  const graph::Graph g = graph::import_onnx(path);
  unlink(path.c_str());
  int count = 0;
  for (const graph::Node& n : g.nodes()) count += n.op == graph::Op::named("hard_swish");
  EXPECT_EQ(count, 1);

  runtime::NDArray x(g.node(g.input_ids()[0]).type.shape);
  const std::vector<float> data = test::random_data(x.size(), 11);
  std::copy(data.begin(), data.end(), x.data());
  EXPECT_LT(test::max_relative_error(run_compiled(g, x), values(graph::interpret(g, inputs_of(x)).at(0))), 1e-4);
}

TEST(HardSwish, TheOpCommandDeclaresItFromTheRegistry) {
  const std::vector<std::string> names = op_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "hard_swish"), names.end());
  EXPECT_EQ(op_arg_fields("hard_swish"), (std::vector<std::string>{"input", "dtype"}));  // every op takes dtype
  OpArgs args;
  args.input = {2, 50};
  const Workload w = make_workload("hard_swish", args);
  std::vector<float> x(100);
  for (int i = 0; i < 100; ++i) x[i] = -5.0f + 0.1f * static_cast<float>(i);
  std::vector<float> want(100);
  w.reference({x.data()}, want.data());
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(want[i], formula(x[i]), 1e-6);
  // The declaration, evaluated element by element, agrees with the reference.
  EXPECT_LT(test::max_relative_error(test::DagInterpreter().run(w.dag, {x.data()}), want), 1e-6);
}

}  // namespace
}  // namespace tessera::ops
