// ONNX import: models exported by PyTorch and one small model per operator
// (tests/data/onnx, made by scripts/make_onnx_test_models.py), each run by
// the interpreter and compiled, against the output onnxruntime computed; and
// damaged files, each one clear error.
#include "graph/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "compile/build.h"
#include "target/target.h"
#include "graph/interpreter.h"
#include "measure/kernel_args.h"
#include "ops/attention.h"
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

  build::BuildResult built = build::build(g, target::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), name);
  for (size_t k = 0; k < inputs.size(); ++k) ex.set_input(static_cast<int>(k), inputs[k]);
  ex.run();
  const auto d = measure::compare_output(ex.get_output(0), expected);
  EXPECT_TRUE(d.ok) << "compiled: " << d.describe();
}

INSTANTIATE_TEST_SUITE_P(
    OnnxExported, OnnxModels,
    ::testing::Values("resnet18_narrow", "mobilenet_v2_narrow", "squeezenet1_1_narrow", "op_conv_same_groups_dilation",
                      "op_conv_asymmetric_pads", "op_conv_pool_auto_pad", "op_gemm_trans_alpha_beta",
                      "op_gemm_transA_matrix_c_opset11", "op_matmul", "op_matmul_activations",
                      "op_matmul_2d_activations", "op_batchnorm_clip_opset11", "op_clip_one_bound_opset13", "op_pools",
                      "op_sigmoid_sub_div_mul_add", "op_add_mul_broadcast", "op_shape_chain_reshape",
                      "op_channel_shuffle_shape_arithmetic", "op_flatten_transpose_softmax_opset11",
                      "op_softmax_axis1_opset11", "op_softmax_axis1_opset13", "op_concat_pad_softmax", "op_pad_opset11",
                      "op_pad_axes_opset18", "op_squeeze_unsqueeze_opset11", "op_squeeze_unsqueeze_opset13",
                      "op_reduce_mean_opset13", "op_reduce_mean_opset18", "op_constant_node",
                      "op_float_data_initializers", "op_unary_math_opset13", "op_binary_tensors_opset13",
                      "op_pow_constant_exponents_opset13", "op_layer_norm_opset17", "op_gelu_erf_pattern_opset17",
                      "op_gelu_opset20", "op_reductions_opset18", "op_reductions_opset13",
                      "op_layer_norm_decomposed_opset13", "op_matmul_attention_opset13", "op_matmul_4d_by_2d_opset13",
                      "op_slice_split_opset13", "op_gather_expand_where_opset13", "op_shape_subgraph_opset13",
                      "op_resize_linear_opset13", "op_resize_linear_align_corners_opset13",
                      "op_resize_nearest_opset13", "op_resize_nearest_down_opset13", "op_conv3d_opset13",
                      "op_depth_space_tile_opset13", "op_lookup_and_masks_opset14", "bert_tiny", "gpt2_tiny",
                      "vit_tiny", "op_einsum_opset12", "op_scatter_nd_known_opset13"),
    [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The tiny transformers' attention becomes one kernel per layer: BERT's and
// ViT's (products, scale, softmax), GPT-2's with its causal mask (an added
// constant once the exporter's where of known positions is folded). BERT's
// and ViT's read their heads as the dense layers wrote them and write their
// output so (sequence first): none of the 4 transposes a layer around them
// is left (ViT's one is its patches'). GPT-2's scale its heads after the
// transposes and concatenates its keys with their cache: transposed as before.
// BERT's and ViT's q, k and v are one dense layer of the three stacked (packed).
TEST(OnnxImport, TransformerAttentionIsOneNodePerLayer) {
  struct Model {
    std::string name;
    int attention, sequence_first, transposes, packed;
  };
  for (const Model& m :
       {Model{"bert_tiny", 2, 2, 0, 2}, Model{"vit_tiny", 2, 2, 1, 2}, Model{"gpt2_tiny", 2, 0, 12, 0}}) {
    const Graph g = build::optimize_for_target(import_onnx(kData + m.name + ".onnx"), target::Target::host());
    int attention = 0, softmax = 0, sequence_first = 0, transposes = 0, packed = 0;
    for (const Node& n : g.nodes()) {
      attention += n.op == Op::named("attention");
      sequence_first += n.op == Op::named("attention") && n.attrs_as<ops::AttentionAttrs>().sequence_first;
      softmax += n.op == Op::named("softmax");
      transposes += n.op == Op::kTranspose;
      packed += n.op == Op::named("attention") && n.attrs_as<ops::AttentionAttrs>().packed;
    }
    EXPECT_EQ(attention, m.attention) << m.name;
    EXPECT_EQ(softmax, 2 - m.attention) << m.name;
    EXPECT_EQ(sequence_first, m.sequence_first) << m.name;
    EXPECT_EQ(transposes, m.transposes) << m.name;
    EXPECT_EQ(packed, m.packed) << m.name;
  }
}

TEST(OnnxImport, OutputsKeepTheModelsNames) {
  Graph g = import_onnx(kData + "resnet18_narrow.onnx");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "logits");
  EXPECT_EQ(g.node(g.input_ids().at(0)).name, "data");
}

// A good model's protobuf, edited by `damage`, written to a file: the import
// must fail with one line containing `expected` and naming the file.
void expect_refused(const std::string& what, const std::function<void(onnx::ModelProto&)>& damage,
                    const std::string& expected, const OnnxImportOptions& options = {},
                    const std::string& model = kData + "resnet18_narrow.onnx") {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(model)));
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

// onnxruntime's QOperator model of the digits CNN damaged: each a line
// naming the model and the node (the node a quantized operator is imported
// as, where that one refuses).
TEST(OnnxImport, DamagedQuantizedOperatorsAreOneLineErrors) {
  const std::string qoperator = std::string(TESSERA_SOURCE_DIR) + "/tests/data/quantized/digits_cnn_qoperator.onnx";
  expect_refused(
      "QLinearConv without its output quantization",
      [](onnx::ModelProto& m) { first(m, "QLinearConv").mutable_input()->DeleteSubrange(6, 3); },
      "('QLinearConv') needs 8 inputs, has 6", {}, qoperator);
  expect_refused(
      "a weight scale computed at run time",
      [](onnx::ModelProto& m) {
        onnx::NodeProto& conv = first(m, "QLinearConv");
        conv.set_input(4, conv.input(0));
      },
      "/DequantizeLinear' ('DequantizeLinear'): the scale must be a constant", {}, qoperator);
  expect_refused(
      "a com.microsoft operator not imported",
      [](onnx::ModelProto& m) { first(m, "QGemm").set_op_type("QAttention"); },
      "('QAttention'): operators of domain \"com.microsoft\" other than QGemm", {}, qoperator);
}

// The first convolution's output made a second graph output: the importer
// names its bias_add (which computes it) after it, and compile's layout
// transform after the convolution ("NAME.out") gives the name back too, so
// get_output(NAME) finds it.
TEST(OnnxImport, OutputsKeepTheModelsNamesThroughBiasesAndLayouts) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(kData + "resnet18_narrow.onnx")));
  const onnx::NodeProto& conv = first(m, "Conv");
  ASSERT_EQ(conv.input_size(), 3) << "the first convolution has a bias (batch norm folded at export)";
  const std::string name = conv.output(0);
  m.mutable_graph()->add_output()->set_name(name);
  const std::string path = "/tmp/tessera-onnx-outputs-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  const Graph g = import_onnx(path);
  unlink(path.c_str());
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "logits");
  EXPECT_EQ(g.node(g.outputs()[1]).name, name);
  EXPECT_EQ(g.node(g.outputs()[1]).op, Op::kBiasAdd);

  runtime::GraphExecutor ex(build::build(g, target::Target::host()).artifact, "two outputs");
  EXPECT_EQ(ex.output_name(0), "logits");
  EXPECT_EQ(ex.output_name(1), name);
}

// A model over 2 GiB keeps its weights in files beside it (onnx's
// save_as_external_data): every initializer moved into one file, at offsets,
// imports to the same graph; a file cut short is one line naming it.
TEST(OnnxImport, ExternalDataIsReadFromTheModelsFolder) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(kData + "resnet18_narrow.onnx")));
  const std::string dir = "/tmp/tessera-external-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string weights;
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (!init.has_raw_data()) continue;
    auto add = [&](const std::string& key, const std::string& value) {
      auto* entry = init.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", "weights.bin");
    add("offset", std::to_string(weights.size()));
    add("length", std::to_string(init.raw_data().size()));
    weights += init.raw_data();
    init.clear_raw_data();
    init.set_data_location(onnx::TensorProto::EXTERNAL);
  }
  ASSERT_GT(weights.size(), 1000u);
  std::ofstream(dir + "/model.onnx", std::ios::binary) << m.SerializeAsString();
  std::ofstream(dir + "/weights.bin", std::ios::binary) << weights;
  const Graph inline_model = import_onnx(kData + "resnet18_narrow.onnx");
  const Graph external_model = import_onnx(dir + "/model.onnx");
  std::vector<runtime::NDArray> x;
  x.push_back(runtime::read_npy(kData + "resnet18_narrow.input0.npy"));
  const std::vector<runtime::NDArray> outs_a = interpret(external_model, x), outs_b = interpret(inline_model, x);
  const runtime::NDArray &a = outs_a.at(0), &b = outs_b.at(0);
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_TRUE(std::equal(a.data(), a.data() + a.size(), b.data()));

  std::ofstream(dir + "/weights.bin", std::ios::binary) << weights.substr(0, weights.size() / 2);
  try {
    import_onnx(dir + "/model.onnx");
    ADD_FAILURE() << "a truncated weights file imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weights.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(truncated?)"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
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
                 "input 'data' dimension 0 ('batch_size') is not fixed: give a batch size (--batch N");
  expect_refused("old opset", [](onnx::ModelProto& m) { m.mutable_opset_import(0)->set_version(9); },
                 "opset 9 is not supported (11 to 28");
  expect_refused("short raw_data", [](onnx::ModelProto& m) {
        auto* init = m.mutable_graph()->mutable_initializer(0);
        init->set_raw_data(init->raw_data().substr(0, 10));
      }, "raw_data holds 10 bytes");
  expect_refused("external data without a file", [](onnx::ModelProto& m) {
        m.mutable_graph()->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
      }, "keeps its data in an external file but names none");
  auto external = [](const std::string& location) {
    return [location](onnx::ModelProto& m) {
      auto* init = m.mutable_graph()->mutable_initializer(0);
      init->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* entry = init->add_external_data();
      entry->set_key("location");
      entry->set_value(location);
    };
  };
  expect_refused("external data outside the folder", external("../../etc/passwd"), "lies outside the model's folder");
  expect_refused("external data at an absolute path", external("/etc/passwd"), "lies outside the model's folder");
  expect_refused("external data missing", external("no-such-file.bin"), "cannot be opened");
  expect_refused("external data claiming gigabytes", [&](onnx::ModelProto& m) {
        // The model file itself: it exists, far shorter than the dims claim.
        external("tessera-onnx-" + std::to_string(getpid()) + ".onnx")(m);
        m.mutable_graph()->mutable_initializer(0)->add_dims(int64_t{1} << 20);
      }, "its dims need at offset 0 (truncated?)");
  expect_refused("bad pads", [](onnx::ModelProto& m) {
        for (auto& a : *first(m, "Conv").mutable_attribute())
          if (a.name() == "pads") a.mutable_ints()->RemoveLast();
      }, "pads must have 4 values");
  expect_refused("impossible shape", [](onnx::ModelProto& m) {
        auto* dim = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1);
        dim->set_dim_value(5);
      }, "('Conv'): node '/conv1/Conv' (conv2d): weight [8, 3, 7, 7] expects 3 input channels, data [1, 5, 64, 64] has 5");
  expect_refused("no nodes", [](onnx::ModelProto& m) { m.mutable_graph()->clear_node(); }, "no graph nodes");
  expect_refused("opset too new", [](onnx::ModelProto& m) { m.mutable_opset_import(0)->set_version(29); },
                 "opset 29 is not supported");
  expect_refused("dims claiming 2^40 floats with no data", [](onnx::ModelProto& m) {
        auto* init = m.mutable_graph()->mutable_initializer(0);
        init->clear_dims();
        init->add_dims(int64_t{1} << 20);
        init->add_dims(int64_t{1} << 20);
      }, "need 1099511627776 x 4");
  expect_refused("dims overflowing", [](onnx::ModelProto& m) {
        auto* init = m.mutable_graph()->mutable_initializer(0);
        init->add_dims(int64_t{1} << 40);
      }, "more than 2^40 elements");
  expect_refused("float_data shorter than dims", [](onnx::ModelProto& m) {
        auto* init = m.mutable_graph()->mutable_initializer(0);
        init->clear_raw_data();
        init->add_float_data(1.0f);
      }, "initializer 'fc.weight': holds 1 values, its dims [10, 32] need 320");
  expect_refused("double initializer", [](onnx::ModelProto& m) {
        auto* init = m.mutable_graph()->mutable_initializer(0);
        init->set_data_type(onnx::TensorProto::DOUBLE);
        init->set_raw_data(std::string(8 * 8 * 3 * 7 * 7, '\0'));
      }, "has element type DOUBLE");
  expect_refused("zero stride with SAME padding", [](onnx::ModelProto& m) {
        onnx::NodeProto& conv = first(m, "Conv");
        for (auto& a : *conv.mutable_attribute())
          if (a.name() == "strides") a.set_ints(0, 0);
        auto* pad = conv.add_attribute();
        pad->set_name("auto_pad");
        pad->set_type(onnx::AttributeProto::STRING);
        pad->set_s("SAME_UPPER");
      }, "strides and dilations must be positive");
  expect_refused("two nodes writing one value", [](onnx::ModelProto& m) {
        first(m, "MaxPool").set_output(0, first(m, "Relu").output(0));
      }, "which node '/relu/Relu' ('Relu') also writes");
  expect_refused("foreign domain", [](onnx::ModelProto& m) { first(m, "Relu").set_domain("ai.onnx.ml"); },
                 "operators of domain 'ai.onnx.ml' are not supported");
  expect_refused("a com.microsoft operator not imported", [](onnx::ModelProto& m) { first(m, "Relu").set_domain("com.microsoft"); },
                 "operators of domain \"com.microsoft\" other than QGemm");
  expect_refused("a name breaking the line", [](onnx::ModelProto& m) { first(m, "Relu").set_op_type("Re\nlu"); },
                 "operator 'Re?lu' is not supported");
  OnnxImportOptions wrong_name;
  wrong_name.input_shapes["image"] = {1, 3, 64, 64};
  expect_refused("shape for an input the model lacks", [](onnx::ModelProto&) {},
                 "a shape is given for input 'image', which the model does not have", wrong_name);
  expect_refused("a reshape of known integers to a wrong count", [](onnx::ModelProto& m) {
        // Flatten's input replaced by a constant int tensor reshaped wrongly.
        auto* g = m.mutable_graph();
        auto* k = g->add_initializer();
        k->set_name("ints");
        k->set_data_type(onnx::TensorProto::INT64);
        k->add_dims(4);
        for (int64_t v : {1, 2, 3, 4}) k->add_int64_data(v);
        auto* t = g->add_initializer();
        t->set_name("target");
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(1);
        t->add_int64_data(7);
        auto* r = g->add_node();
        r->set_name("bad_reshape");
        r->set_op_type("Reshape");
        r->add_input("ints");
        r->add_input("target");
        r->add_output("reshaped");
        first(m, "Gemm").set_input(0, "reshaped");
      }, "node 'bad_reshape' ('Reshape'): cannot reshape 4 values to the target shape");

  // The dynamic batch is importable once a batch size is given.
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(kData + "resnet18_narrow.onnx")));
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  const std::string path = "/tmp/tessera-onnx-batch-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  OnnxImportOptions options;
  options.batch = 3;
  Graph batched = import_onnx(path, options);
  EXPECT_EQ(batched.node(batched.input_ids().at(0)).type.shape[0], 3);
  unlink(path.c_str());
}

// Symbolic dimensions other than the batch (an image side, a sequence) are
// fixed by name; unnamed, the refusal says which flag names them.
TEST(OnnxImport, SymbolicDimensionsAreFixedByName) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(read_bytes(kData + "resnet18_narrow.onnx")));
  auto* shape = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(0)->set_dim_param("N");
  shape->mutable_dim(2)->set_dim_param("side");
  shape->mutable_dim(3)->set_dim_param("side");
  const std::string path = "/tmp/tessera-onnx-dims-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  OnnxImportOptions options;
  options.dims = {{"N", 2}, {"side", 32}};
  const Graph g = import_onnx(path, options);
  EXPECT_EQ(g.node(g.input_ids().at(0)).type.shape, (Shape{2, 3, 32, 32}));
  options.dims = {{"N", 2}};
  try {
    import_onnx(path, options);
    ADD_FAILURE() << "imported with 'side' unknown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dimension 2 ('side') is not fixed: give its size (--dim side=N or --shape "
                                         "data=DIMS)"),
              std::string::npos)
        << e.what();
  }
  options.dims = {{"N", 2}, {"side", 32}, {"sequence", 8}};
  EXPECT_THROW(import_onnx(path, options), Error);  // no input has 'sequence'
  unlink(path.c_str());
}

// After the Relu, a node of `op` reading its output; the Flatten reads the new node's output.
onnx::NodeProto& insert_after_relu(onnx::ModelProto& m, const std::string& op) {
  onnx::NodeProto& relu = first(m, "Relu");
  const std::string relu_out = relu.output(0);
  onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_name("hostile_" + op);
  n->set_op_type(op);
  n->add_input(relu_out);
  n->add_output("hostile_out");
  for (auto& other : *m.mutable_graph()->mutable_node())
    if (&other != n && other.op_type() == "MaxPool") other.set_input(0, "hostile_out");
  return *n;
}

void add_axes(onnx::ModelProto& m, onnx::NodeProto& n, std::vector<int64_t> axes) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(n.name() + ".axes");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(axes.size()));
  for (int64_t a : axes) t->add_int64_data(a);
  n.add_input(t->name());
}

TEST(OnnxImport, WhatOnnxruntimeRefusesIsRefused) {
  expect_refused("squeeze axis out of range", [](onnx::ModelProto& m) { add_axes(m, insert_after_relu(m, "Squeeze"), {7}); },
                 "axis 7 is out of range for 4 axes");
  expect_refused("squeeze of a dimension that is not 1", [](onnx::ModelProto& m) {
        add_axes(m, insert_after_relu(m, "Squeeze"), {1});
      }, "axis 1 has size 8, not 1");
  expect_refused("unsqueeze with an axis twice", [](onnx::ModelProto& m) {
        add_axes(m, insert_after_relu(m, "Unsqueeze"), {0, 0});
      }, "axis 0 is given twice");
  expect_refused("empty constant", [](onnx::ModelProto& m) {
        onnx::NodeProto* c = m.mutable_graph()->add_node();
        c->set_name("empty");
        c->set_op_type("Constant");
        c->add_output("nothing");
        auto* a = c->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
        a->mutable_t()->add_dims(0);
      }, "an empty Constant");
  auto batch_dim = [](onnx::ModelProto& m) {
    return m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
  };
  for (int64_t bad : {0, -1})
    expect_refused("batch dimension " + std::to_string(bad), [&](onnx::ModelProto& m) { batch_dim(m)->set_dim_value(bad); },
                   "dimension 0 is " + std::to_string(bad) + ": a dimension must be a positive size");
  OnnxImportOptions batch4;
  batch4.batch = 4;
  expect_refused("a batch asked of a fixed-batch model", [](onnx::ModelProto&) {},
                 "input 'data' has a fixed batch of 1; it cannot run at batch 4", batch4);
}

// A chain of 200000 Relus listed last-first: ordering them must not recurse
// once per node (the stack would overflow), and the chain imports.
TEST(OnnxImport, LongChainListedBackwardsImports) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  constexpr int kChain = 200000;
  for (int i = kChain; i-- > 0;) {
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->add_input(i == 0 ? "x" : "v" + std::to_string(i - 1));
    n->add_output("v" + std::to_string(i));
  }
  g->add_output()->set_name("v" + std::to_string(kChain - 1));
  const std::string path = "/tmp/tessera-onnx-chain-" + std::to_string(getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  Graph imported = import_onnx(path);
  EXPECT_EQ(imported.size(), static_cast<size_t>(kChain + 1));
  unlink(path.c_str());
}

TEST(OnnxImport, DamagedBytesAreOneLineErrors) {
  const std::string good = read_bytes(kData + "resnet18_narrow.onnx");
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
