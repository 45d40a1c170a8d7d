// compile --quantize int8 end to end: the narrow ResNet-18 quantized with
// each calibration method compiles to the int8 kernels' blocks, runs, and
// each of its integer kernels equals the integer reference exactly on its
// compiled inputs (driver/kernel_check.h; a changed weight is caught and
// named); calibration reads K samples stacked in one .npy; bad values are
// one line naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "compile/build.h"
#include "driver/calibration_samples.h"
#include "driver/compile.h"
#include "driver/kernel_check.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/onnx_import.h"
#include "measure/kernel_args.h"
#include "ops/qlinear_conv2d.h"
#include "runtime/graph_executor.h"
#include "runtime/npy.h"
#include "tessera/error.h"

namespace tessera::driver {
namespace {

const std::string kNarrow = std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/resnet18_narrow.onnx";

TEST(QuantizedCompile, EachCalibrationMethodCompilesAndEqualsTheQuantizedGraph) {
  const graph::Graph model = graph::import_onnx(kNarrow);
  for (const char* method : {"min-max", "percentile", "kl-entropy"}) {
    CompileOptions o;
    o.quantize = "int8";
    o.calibrate = "3";
    o.shipped_records = false;
    o.quantization.calibration.method = graph::calibration_method(method);
    build::BuildResult built = compile(model, target::Target::host(), o);
    int int8 = 0, blocked = 0;
    for (const auto& n : built.optimized.nodes()) {
      if (graph::op_name(n.op) != "qlinear_conv2d") continue;
      ++int8;
      blocked += n.attrs_as<ops::QLinearConv2dAttrs>().is_blocked();
    }
    EXPECT_GE(int8, 10) << method;  // every ungrouped convolution but the first
    EXPECT_EQ(blocked, int8) << method;
    runtime::GraphExecutor ex(std::move(built.artifact), "int8", /*keep_every_tensor=*/true);
    std::vector<runtime::NDArray> inputs;
    inputs.push_back(ex.random_input(0, 9));
    ex.set_input(0, inputs[0]);
    ex.run();
    const KernelCheck check = check_each_kernel(built.optimized, ex, inputs);
    EXPECT_GE(check.integer_values, int8) << method;
    EXPECT_TRUE(check.exact()) << method << ": " << check.first_difference;
    EXPECT_GT(check.float_values, 0) << method;
    EXPECT_LE(check.float_max_rel_error, 1e-5) << method;

    // A weight the kernels did not compute with: that convolution differs.
    graph::Graph changed = built.optimized;
    for (const auto& n : changed.nodes()) {
      if (graph::op_name(n.op) != "qlinear_conv2d") continue;
      graph::Node& w = changed.mutable_node(n.inputs[1]);
      auto values = std::make_shared<runtime::NDArray>(w.value->shape());
      std::copy(w.value->data(), w.value->data() + w.value->size(), values->data());
      values->data()[0] = values->data()[0] > 0 ? -100.0f : 100.0f;
      w.value = values;
      const KernelCheck caught = check_each_kernel(changed, ex, inputs);
      EXPECT_FALSE(caught.exact()) << method;
      EXPECT_NE(caught.first_difference.find(n.describe()), std::string::npos) << caught.first_difference;
      break;
    }
  }
}

// Asked for int8, a model none of whose convolutions int8 kernels take (NHWC
// ones here) is refused in one line saying why, not compiled float32 silently;
// one that quantizes says how much of it did.
TEST(QuantizedCompile, SaysHowManyConvolutionsGotInt8AndRefusesNone) {
  graph::GraphBuilder b;
  const graph::NodeId x = b.input("x", {1, 8, 8, 4});
  ops::Conv2dAttrs nhwc = ops::Conv2dAttrs::symmetric(1, 1);
  nhwc.data_layout = "NHWC", nhwc.kernel_layout = "HWIO";
  const graph::Graph model =
      b.finish({b.conv2d(x, b.random_constant("w", {3, 3, 4, 8}, -0.5f, 0.5f), nhwc, "conv")});
  CompileOptions o;
  o.quantize = "int8";
  o.quantization.skip_layers = {};
  o.quantization.global_scale = 4.0;
  o.shipped_records = false;
  o.keep_layout = true;
  try {
    compile(model, target::Target::host(), o);
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no convolution of this model is quantized"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 in a form int8 kernels do not take"), std::string::npos) << e.what();
  }
  std::ostringstream said;
  o.warnings = &said;
  o.quantization.skip_layers = {0};
  compile(graph::import_onnx(kNarrow), target::Target::host(), o);
  EXPECT_NE(said.str().find("note: --quantize int8: "), std::string::npos) << said.str();
  EXPECT_NE(said.str().find("(1 kept float32 by --skip-layers)"), std::string::npos) << said.str();
}

TEST(QuantizedCompile, CalibrationTakesStackedSamplesFromANpyAndRefusesBadOnes) {
  const graph::Graph model = graph::import_onnx(kNarrow);
  const graph::Shape shape = model.node(model.input_ids()[0]).type.shape;  // (1, 3, 64, 64)
  graph::Shape stacked = shape;
  stacked.insert(stacked.begin(), 5);
  runtime::NDArray five(stacked);
  five.fill_random(4);
  const std::string path = (std::filesystem::temp_directory_path() / "tessera_calibration.npy").string();
  runtime::write_npy(five, path);
  const auto samples = calibration_samples(model, path);
  ASSERT_EQ(samples.size(), 5u);
  EXPECT_EQ(samples[2][0].shape(), shape);
  EXPECT_EQ(samples[2][0].data()[7], five.data()[2 * samples[2][0].size() + 7]);
  runtime::write_npy(runtime::NDArray({2, 3}), path);
  try {
    calibration_samples(model, path);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is neither the input's"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_EQ(calibration_samples(model, "2").size(), 2u);
  EXPECT_THROW(calibration_samples(model, "0"), Error);
  EXPECT_THROW(calibration_samples(model, "no-such-file.npy"), Error);
  CompileOptions o;
  o.quantize = "int4";
  EXPECT_THROW(compile(model, target::Target::host(), o), Error);
}

}  // namespace
}  // namespace tessera::driver

namespace tessera::driver {
namespace {

// A small CNN trained on scikit-learn's handwritten digits
// (scripts/make_quantized_test_models.py): its 360 test images classified in
// float32 (equal to onnxruntime's logits) and quantized to int8 by Tessera,
// calibrated on 360 training images: top-1 within one point of float32.
double top1(const runtime::NDArray& logits, const runtime::NDArray& labels) {
  const int64_t n = logits.shape()[0], classes = logits.shape()[1];
  int64_t right = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data() + i * classes;
    right += std::max_element(row, row + classes) - row == static_cast<int64_t>(labels.data()[i]);
  }
  return static_cast<double>(right) / static_cast<double>(n);
}

runtime::NDArray run(build::BuildResult built, const runtime::NDArray& images) {
  runtime::GraphExecutor ex(std::move(built.artifact), "digits");
  ex.set_input(0, images);
  ex.run();
  return ex.get_output(0);
}

TEST(QuantizedCompile, DigitsCnnInInt8KeepsItsTop1WithinOnePoint) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/quantized/";
  const graph::Graph model = graph::import_onnx(dir + "digits_cnn.onnx");
  const runtime::NDArray images = runtime::read_npy(dir + "digits_test_images.npy");
  const runtime::NDArray labels = runtime::read_npy(dir + "digits_test_labels.npy");
  CompileOptions o;
  o.shipped_records = false;
  const runtime::NDArray float32 = run(compile(model, target::Target::host(), o), images);
  const measure::OutputComparison c = measure::compare_output(float32, runtime::read_npy(dir + "digits_cnn.expected.npy"));
  EXPECT_TRUE(c.ok) << "float32 against onnxruntime: " << c.describe();
  const double float_top1 = top1(float32, labels);
  EXPECT_GT(float_top1, 0.95);
  o.quantize = "int8";
  o.calibrate = dir + "digits_calibration_images.npy";
  for (const char* method : {"min-max", "percentile"}) {
    o.quantization.calibration.method = graph::calibration_method(method);
    const double int8_top1 = top1(run(compile(model, target::Target::host(), o), images), labels);
    EXPECT_GE(int8_top1, float_top1 - 0.01) << method << ": float32 " << float_top1;
  }
}

}  // namespace
}  // namespace tessera::driver

namespace tessera::driver {
namespace {

// onnxruntime's quantizations of the same CNN import and give onnxruntime's
// logits: allowed one quantization step of the logits (a float sum rounded
// in another order may cross a step), and the same class for every image.
// quantize_static's QDQ format (per-channel int8 weights, uint8 activations;
// int8 activations, read as uint8 + 128) and its QOperator format
// (QLinearConv, QGemm, QLinearGlobalAveragePool)
// run their three convolutions (with their ReLUs), the max pooling and the
// classifier as int8 kernels, with onnxruntime's integers and scales; quantize_dynamic's
// (DynamicQuantizeLinear, ConvInteger, MatMulInteger) computes the integer
// products of its run-time quantization in float, exactly.
struct OnnxruntimeModel {
  const char* name;
  int int8_convolutions;
};

class OnnxruntimeQuantized : public testing::TestWithParam<OnnxruntimeModel> {};

TEST_P(OnnxruntimeQuantized, ImportsAndGivesOnnxruntimesLogits) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/quantized/";
  const graph::Graph model = graph::import_onnx(dir + GetParam().name + ".onnx");
  int convolutions = 0, int8_convolutions = 0, int8_pools = 0, int8_dense = 0;
  for (const auto& n : build::optimize_for_target(model, target::Target::host(), {}, true, false).nodes()) {
    convolutions += graph::op_name(n.op) == "conv2d";
    int8_convolutions += graph::op_name(n.op) == "qlinear_conv2d";
    int8_pools += n.op == graph::Op::kMaxPool2d && n.type.dtype == graph::DataType::kUInt8;
    int8_dense += graph::op_name(n.op) == "qlinear_dense";
  }
  const bool int8 = GetParam().int8_convolutions > 0;
  EXPECT_EQ(int8_convolutions, GetParam().int8_convolutions);
  EXPECT_EQ(convolutions, 3 - GetParam().int8_convolutions);
  EXPECT_EQ(int8_pools, int8 ? 1 : 0);
  EXPECT_EQ(int8_dense, int8 ? 1 : 0);  // the classifier
  const runtime::NDArray images = runtime::read_npy(dir + "digits_test_images.npy");
  const runtime::NDArray want = runtime::read_npy(dir + GetParam().name + ".expected.npy");
  CompileOptions o;
  o.shipped_records = false;
  const runtime::NDArray got = run(compile(model, target::Target::host(), o), images);
  const measure::OutputComparison c = measure::compare_output(got, want, 0.01);
  EXPECT_TRUE(c.ok) << c.describe();
  const runtime::NDArray labels = runtime::read_npy(dir + "digits_test_labels.npy");
  EXPECT_EQ(top1(got, labels), top1(want, labels));
}

INSTANTIATE_TEST_SUITE_P(Formats, OnnxruntimeQuantized,
                         testing::Values(OnnxruntimeModel{"digits_cnn_qdq", 3}, OnnxruntimeModel{"digits_cnn_qoperator", 3},
                                         OnnxruntimeModel{"digits_cnn_qdq_s8s8", 3},
                                         OnnxruntimeModel{"digits_cnn_dynamic", 0}),
                         [](const testing::TestParamInfo<OnnxruntimeModel>& info) { return std::string(info.param.name); });

// One transformer encoder layer quantized by onnxruntime (QDQ, uint8
// activations): its six MatMuls by weights (reshaped around, as 3-D
// activations import) run as qlinear_dense, attention's two products of
// activations as qlinear_batch_matmul, its residual adds as qlinear_add;
// the softmax and layer norms stay float between their pairs. The layer
// gives onnxruntime's output: most values the same (85 % within 1e-4 here),
// the rest where a float sum rounded in another order crossed a step of a
// quantization before the last layer norm (2 % of the output's range).
TEST(QuantizedCompile, OnnxruntimesQuantizedEncoderRunsItsProductsInInt8) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/tests/data/quantized/";
  const graph::Graph model = graph::import_onnx(dir + "tiny_encoder_qdq.onnx");
  std::map<std::string, int> ops;
  for (const auto& n : build::optimize_for_target(model, target::Target::host(), {}, true, false).nodes())
    ++ops[graph::op_name(n.op)];
  EXPECT_EQ(ops["qlinear_dense"], 6);
  EXPECT_EQ(ops["qlinear_batch_matmul"], 2);
  EXPECT_EQ(ops["qlinear_add"], 2);
  EXPECT_EQ(ops["dense"] + ops["batch_matmul"] + ops["attention"], 0);
  CompileOptions o;
  o.shipped_records = false;
  const runtime::NDArray x = runtime::read_npy(dir + "tiny_encoder_input.npy");
  const runtime::NDArray got = run(compile(model, target::Target::host(), o), x);
  const runtime::NDArray want = runtime::read_npy(dir + "tiny_encoder_qdq.expected.npy");
  const measure::OutputComparison c = measure::compare_output(got, want, 0.02);
  EXPECT_TRUE(c.ok) << c.describe();
  int64_t equal = 0;
  for (int64_t i = 0; i < got.size(); ++i) equal += std::fabs(got[i] - want[i]) <= 1e-4f * std::fabs(want[i]) + 1e-5f;
  EXPECT_GE(equal, got.size() * 4 / 5) << c.describe();
}

TEST(QuantizedCompile, QdqModelImportsItsPairsAndWeightsAsTheyAre) {
  const graph::Graph model = graph::import_onnx(std::string(TESSERA_SOURCE_DIR) + "/tests/data/quantized/digits_cnn_qdq.onnx");
  int quantize = 0, dequantize = 0, weights = 0;
  for (const auto& n : model.nodes()) {
    quantize += graph::op_name(n.op) == "quantize";
    dequantize += graph::op_name(n.op) == "dequantize";
    weights += graph::op_name(n.op) == "dequantize_per_channel";
  }
  EXPECT_EQ(quantize, 8);  // the input, each activation, the logits
  EXPECT_EQ(dequantize, 8);
  // Four weights and four biases as their integers, and the Gemm's weight
  // again as dense reads it, (N, K).
  EXPECT_EQ(weights, 9);
}

}  // namespace
}  // namespace tessera::driver
