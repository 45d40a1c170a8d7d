// compile --quantize int8 end to end: the narrow ResNet-18 quantized with
// each calibration method compiles, runs, and equals its quantized graph's
// interpreter; calibration reads K samples stacked in one .npy; bad values
// are one line naming them.
#include <gtest/gtest.h>

#include <filesystem>

#include "driver/calibration_samples.h"
#include "driver/compile.h"
#include "graph/interpreter.h"
#include "graph/onnx_import.h"
#include "measure/kernel_args.h"
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
    int int8 = 0;
    for (const auto& n : built.optimized.nodes()) int8 += graph::op_name(n.op) == "qlinear_conv2d";
    EXPECT_GE(int8, 10) << method;  // every ungrouped convolution but the first
    runtime::GraphExecutor ex(std::move(built.artifact), "int8");
    std::vector<runtime::NDArray> inputs;
    inputs.push_back(ex.random_input(0, 9));
    ex.set_input(0, inputs[0]);
    ex.run();
    const auto want = graph::interpret(built.optimized, inputs);
    const measure::OutputComparison c = measure::compare_output(ex.get_output(0), want[0]);
    EXPECT_TRUE(c.ok) << method << ": " << c.describe();
  }
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
