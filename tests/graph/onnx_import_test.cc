// ONNX import: models exported by PyTorch and one small model per operator
// (tests/data/onnx, made by scripts/make_onnx_test_models.py), each run by
// the interpreter and compiled, against the output onnxruntime computed; and
// damaged files, each one clear error.
#include "graph/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "build/build.h"
#include "codegen/target.h"
#include "graph/interpreter.h"
#include "measure/kernel_args.h"
#include "runtime/graph_executor.h"
#include "runtime/npy.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class OnnxModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxModels, InterpretedAndCompiledMatchOnnxruntime) {
  const std::string name = GetParam();
  Graph g = import_onnx(kData + name + ".onnx");
  std::vector<runtime::NDArray> inputs;
  for (size_t k = 0; k < g.input_ids().size(); ++k)
    inputs.push_back(runtime::read_npy(kData + name + ".input" + std::to_string(k) + ".npy"));
  const runtime::NDArray expected = runtime::read_npy(kData + name + ".expected.npy");

  const auto interpreted = interpret(g, inputs);
  ASSERT_EQ(interpreted.at(0).size(), expected.size());
  const auto c = measure::compare_output(interpreted[0], expected);
  EXPECT_TRUE(c.ok) << "interpreted: " << c.describe();

  build::BuildResult built = build::build(g, codegen::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), name);
  for (size_t k = 0; k < inputs.size(); ++k) ex.set_input(static_cast<int>(k), inputs[k]);
  ex.run();
  const auto d = measure::compare_output(ex.get_output(0), expected);
  EXPECT_TRUE(d.ok) << "compiled: " << d.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Exported, OnnxModels,
    ::testing::Values("tiny_resnet", "tiny_mobilenet_v2", "tiny_squeezenet", "op_conv_same_groups_dilation",
                      "op_conv_asymmetric_pads", "op_gemm_trans_alpha_beta", "op_matmul", "op_batchnorm_clip_opset11",
                      "op_pools", "op_sigmoid_sub_div_mul_add", "op_shape_chain_reshape",
                      "op_flatten_transpose_softmax_opset11", "op_concat_pad_softmax", "op_squeeze_unsqueeze_opset11",
                      "op_reduce_mean_opset18", "op_constant_node"));

TEST(OnnxImport, OutputsKeepTheModelsNames) {
  Graph g = import_onnx(kData + "tiny_resnet.onnx");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "logits");
  EXPECT_EQ(g.node(g.input_ids().at(0)).name, "data");
}

// A good model's protobuf, edited by `damage`, written to a file: the import
// must fail with one line containing `expected` and naming the file.
void expect_refused(const std::string& what, const std::function<void(onnx::ModelProto&)>& damage,
                    const std::string& expected, const OnnxImportOptions& options = {}) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(kData + "tiny_resnet.onnx")));
  damage(m);
  const std::string path = "/tmp/tessera-onnx-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  try {
    import_onnx(path, options);
    ADD_FAILURE() << what << ": imported";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(expected), std::string::npos) << what << ": " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << what << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
  }
  unlink(path.c_str());
}

onnx::NodeProto& first(onnx::ModelProto& m, const std::string& op) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == op) return n;
  throw std::runtime_error("no " + op);
}

TEST(OnnxImport, DamagedModelsAreOneLineErrors) {
  expect_refused("unknown operator", [](onnx::ModelProto& m) { first(m, "Relu").set_op_type("FancyRelu"); },
                 "operator 'FancyRelu' is not supported");
  expect_refused("missing input", [](onnx::ModelProto& m) { first(m, "Relu").set_input(0, "nowhere"); },
                 "reads 'nowhere', which no node, input or initializer provides");
  expect_refused("cycle", [](onnx::ModelProto& m) {
        onnx::NodeProto& relu = first(m, "Relu");
        first(m, "Conv").set_input(0, relu.output(0));
      }, "the graph has a cycle");
  expect_refused("float16 input", [](onnx::ModelProto& m) {
        m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
      }, "input 'data' has element type FLOAT16; Tessera runs float32 models");
  auto dynamic_batch = [](onnx::ModelProto& m) {
    auto* dim = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    dim->set_dim_param("batch_size");
  };
  expect_refused("dynamic batch", dynamic_batch,
                 "input 'data' dimension 0 ('batch_size') is not fixed: give a batch size (--batch N)");
  expect_refused("old opset", [](onnx::ModelProto& m) { m.mutable_opset_import(0)->set_version(9); },
                 "opset 9 is not supported (11 to 18");
  expect_refused("short raw_data", [](onnx::ModelProto& m) {
        auto* init = m.mutable_graph()->mutable_initializer(0);
        init->set_raw_data(init->raw_data().substr(0, 10));
      }, "raw_data holds 10 bytes");
  expect_refused("external data", [](onnx::ModelProto& m) {
        m.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
      }, "keeps its data in an external file");
  expect_refused("bad pads", [](onnx::ModelProto& m) {
        for (auto& a : *first(m, "Conv").mutable_attribute())
          if (a.name() == "pads") a.mutable_ints()->RemoveLast();
      }, "pads must have 4 values");
  expect_refused("impossible shape", [](onnx::ModelProto& m) {
        auto* dim = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1);
        dim->set_dim_value(5);
      }, "('Conv'): node '/0/Conv' (conv2d): weight [8, 3, 7, 7] expects 3 input channels, data [1, 5, 32, 32] has 5");
  expect_refused("no nodes", [](onnx::ModelProto& m) { m.mutable_graph()->clear_node(); }, "no graph nodes");

  // The dynamic batch is importable once a batch size is given.
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(kData + "tiny_resnet.onnx")));
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  const std::string path = "/tmp/tessera-onnx-batch-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  OnnxImportOptions options;
  options.batch = 3;
  Graph batched = import_onnx(path, options);
  EXPECT_EQ(batched.node(batched.input_ids().at(0)).type.shape[0], 3);
  unlink(path.c_str());
}

TEST(OnnxImport, DamagedBytesAreOneLineErrors) {
  const std::string good = read_bytes(kData + "tiny_resnet.onnx");
  const std::string path = "/tmp/tessera-onnx-bytes-" + std::to_string(getpid()) + ".onnx";
  std::string flipped = good;
  for (size_t i = 0; i < flipped.size(); i += 97) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  const std::pair<std::string, std::string> cases[] = {
      {"", "the file is empty"},
      {good.substr(0, good.size() / 2), "ONNX model"},
      {good.substr(0, 7), "ONNX model"},
      {"GIF89a this is a picture, not a model", "ONNX model"},
      {flipped, "ONNX model"},
  };
  for (const auto& [bytes, expected] : cases) {
    std::ofstream(path, std::ios::binary) << bytes;
    try {
      import_onnx(path);
      ADD_FAILURE() << "imported damaged bytes (" << bytes.size() << " bytes)";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  unlink(path.c_str());
  EXPECT_THROW(import_onnx("/nonexistent/model.onnx"), Error);
}

}  // namespace
}  // namespace tessera::graph
