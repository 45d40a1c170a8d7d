// Compile on first call: guards on input shapes, the memory and disk caches,
// the recompile limit, and reduce-overhead's zero-copy calls, on the narrow
// ResNet-18 of tests/data/onnx against the reference interpreter.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "driver/compile.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "jit/jit_model.h"
#include "measure/kernel_args.h"
#include "runtime/graph_executor.h"
#include "tessera/error.h"

namespace tessera::jit {
namespace {

const std::string kModel = std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/resnet18_narrow.onnx";
// The same topology exported with a symbolic batch.
const std::string kAnyBatch = std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/resnet18_narrow_dynamic.onnx";

class JitModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = std::filesystem::temp_directory_path() / ("tessera-jit-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(cache_);
  }
  void TearDown() override { std::filesystem::remove_all(cache_); }
  JitOptions options(JitMode mode = JitMode::kDefault) {
    JitOptions o;
    o.mode = mode;
    o.threads = 2;
    o.cache_dir = cache_.string();
    o.log = &log_;
    return o;
  }
  // An input of the model at `batch`, and what the interpreter makes of it.
  static runtime::NDArray input(int64_t batch, uint64_t seed, const std::string& model = kModel) {
    const graph::Graph g = graph::load_model(model, {batch});
    runtime::NDArray x(g.node(g.input_ids()[0]).type.shape);
    x.fill_random(seed);
    return x;
  }
  // A call's first output, copied.
  static runtime::NDArray first(const std::vector<JitOutput>& outputs) {
    runtime::NDArray out(outputs.at(0).shape);
    std::copy(outputs[0].data, outputs[0].data + out.size(), out.data());
    return out;
  }
  static void expect_reference(const std::vector<JitOutput>& outputs, const runtime::NDArray& x,
                               const std::string& model = kModel) {
    std::vector<runtime::NDArray> inputs;
    inputs.emplace_back(x.shape());
    std::copy(x.data(), x.data() + x.size(), inputs[0].data());
    const auto want = graph::interpret(graph::load_model(model, {x.shape()[0]}), inputs);
    const auto c = measure::compare_output(first(outputs), want[0]);
    EXPECT_TRUE(c.ok) << c.describe();
  }
  static std::vector<JitInput> args(const runtime::NDArray& x) { return {{x.data(), x.shape()}}; }
  // Compiles the narrow model on `x` into the disk cache; returns the entry's key.
  std::string compile_into_cache(const runtime::NDArray& x) {
    JitModel first("narrow", model_source(kModel), options());
    first.run(args(x));
    EXPECT_TRUE(std::filesystem::exists(cache_ / (first.last_call().cache_key + ".tsr")));
    return first.last_call().cache_key;
  }

  std::filesystem::path cache_;
  std::ostringstream log_;
};

TEST_F(JitModelTest, CompilesOnFirstCallOnlyAndMatchesTheInterpreter) {
  JitModel m("narrow", model_source(kModel), options());
  EXPECT_EQ(m.compilations(), 0);  // nothing happens before the first call
  const auto x = input(1, 1);
  expect_reference(m.run(args(x)), x);
  EXPECT_TRUE(m.last_call().compiled);
  EXPECT_FALSE(m.last_call().from_disk);
  const auto y = input(1, 2);
  expect_reference(m.run(args(y)), y);
  EXPECT_FALSE(m.last_call().compiled);
  EXPECT_EQ(m.compilations(), 1);
}

// quantize="int8": the jit builds what compile --quantize int8 builds (the
// same outputs), under another cache key than the float build; dynamic
// shapes are refused in one line.
TEST_F(JitModelTest, QuantizedIsAnotherArtifactEqualToCompileQuantize) {
  const auto x = input(1, 4);
  const std::string float_key = compile_into_cache(x);
  JitOptions o = options();
  o.quantize = "int8";
  o.calibrate = "2";
  JitModel m("narrow", model_source(kModel), o);
  const runtime::NDArray got = first(m.run(args(x)));
  EXPECT_NE(m.last_call().cache_key, float_key);

  driver::CompileOptions c;
  c.quantize = "int8";
  c.calibrate = "2";
  target::Target t = target::Target::host();
  t.threads = 2;
  runtime::GraphExecutor ex(driver::compile(graph::load_model(kModel, {1}), t, c).artifact, "int8");
  ex.set_input(0, x);
  ex.run();
  const auto compared = measure::compare_output(got, ex.get_output(0), 0.0);
  EXPECT_TRUE(compared.ok) << compared.describe();
  // And it is quantized: not the float model's outputs exactly.
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(x.shape());
  std::copy(x.data(), x.data() + x.size(), inputs[0].data());
  EXPECT_GT(measure::compare_output(got, graph::interpret(graph::load_model(kModel, {1}), inputs)[0]).max_rel_error,
            1e-4);

  o.dynamic = true;
  EXPECT_THROW(JitModel("narrow", model_source(kModel), o), Error);
}

TEST_F(JitModelTest, ASecondModelStartsWarmFromTheDiskCache) {
  const auto x = input(1, 3);
  const std::string key = compile_into_cache(x);
  JitModel second("narrow", model_source(kModel), options());
  expect_reference(second.run(args(x)), x);
  EXPECT_TRUE(second.last_call().from_disk);
  EXPECT_EQ(second.last_call().cache_key, key);

  // Other records are another build: a different key.
  const std::string records = (cache_ / "empty.log").string();
  std::ofstream(records).close();
  JitOptions with_records = options();
  with_records.records = records;
  JitModel third("narrow", model_source(kModel), with_records);
  third.run(args(x));
  EXPECT_NE(third.last_call().cache_key, key);
  EXPECT_FALSE(third.last_call().from_disk);
}

TEST_F(JitModelTest, ADamagedCacheEntryIsRebuiltWithAWarning) {
  const auto x = input(1, 4);
  const std::string key = compile_into_cache(x);
  std::ofstream(cache_ / (key + ".tsr"), std::ios::trunc) << "junk";
  JitModel second("narrow", model_source(kModel), options());
  expect_reference(second.run(args(x)), x);
  EXPECT_FALSE(second.last_call().from_disk);
  EXPECT_NE(log_.str().find("unreadable"), std::string::npos) << log_.str();
}

// conv + relu + global pool + dense at any batch and image size: a network
// whose shapes the caller chooses.
graph::Graph small_network(const std::vector<std::vector<int64_t>>& shapes) {
  graph::GraphBuilder b(3);
  graph::NodeId x = b.input("data", shapes.at(0));
  graph::NodeId y = b.relu(b.conv2d(x, b.random_constant("w", {8, shapes[0][1], 3, 3}, -0.3f, 0.3f),
                                    graph::Conv2dAttrs::symmetric(1, 1), "conv"), "relu");
  y = b.flatten(b.global_avg_pool2d(y, "NCHW", "gap"), 1, "flatten");
  return b.finish({b.dense(y, b.random_constant("fc", {5, 8}, -0.3f, 0.3f), "fc")});
}

TEST_F(JitModelTest, NewShapesRecompileUpToTheLimitThenAClearError) {
  JitOptions o = options();
  o.recompile_limit = 2;
  o.disk_cache = false;
  JitModel m("small", small_network, o);
  auto check = [&](const std::vector<int64_t>& shape, uint64_t seed) {
    runtime::NDArray x(shape);
    x.fill_random(seed);
    const runtime::NDArray got = first(m.run(args(x)));
    std::vector<runtime::NDArray> inputs;
    inputs.emplace_back(x.shape());
    std::copy(x.data(), x.data() + x.size(), inputs[0].data());
    const auto c = measure::compare_output(got, graph::interpret(small_network({shape}), inputs)[0]);
    EXPECT_TRUE(c.ok) << c.describe();
  };
  check({1, 3, 8, 8}, 5);
  check({2, 3, 12, 12}, 6);
  EXPECT_TRUE(m.last_call().compiled);
  EXPECT_NE(log_.str().find("recompiling for input shapes [2,3,12,12] (compilation 2 of at most 2)"),
            std::string::npos)
      << log_.str();
  try {
    m.run(args(runtime::NDArray({3, 3, 8, 8})));
    ADD_FAILURE() << "a third shape past a limit of 2 compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recompile limit of 2 reached: input shapes [3,3,8,8]"), std::string::npos)
        << e.what();
  }
  // Past the limit, shapes the model cannot take still say what is wrong.
  try {
    m.run(args(runtime::NDArray({1, 3, 8})));
    ADD_FAILURE() << "an image without a width ran";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("recompile limit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("must have rank 4, got [1, 3, 8]"), std::string::npos) << e.what();
  }
  check({1, 3, 8, 8}, 8);  // shapes already compiled still run
  EXPECT_FALSE(m.last_call().compiled);
  EXPECT_EQ(m.compilations(), 2);
}

// dynamic: a second batch size compiles one artifact for batches 1..4;
// every batch in it then runs without compiling, as the interpreter at that
// batch; a batch past it compiles a wider range.
TEST_F(JitModelTest, DynamicCompilesOneRangeForADimensionSeenAtTwoSizes) {
  JitOptions o = options();
  o.dynamic = true;
  JitModel m("narrow", model_source(kAnyBatch), o);
  const runtime::NDArray one = input(1, 21, kAnyBatch), three = input(3, 22, kAnyBatch), two = input(2, 23, kAnyBatch),
                         six = input(6, 24, kAnyBatch);
  expect_reference(m.run(args(one)), one, kAnyBatch);
  expect_reference(m.run(args(three)), three, kAnyBatch);
  EXPECT_TRUE(m.last_call().compiled);
  EXPECT_NE(log_.str().find("narrow: input 0 axis 0 varies (1 and 3): one artifact for sizes 1..4 (buckets 1 2 4)"),
            std::string::npos)
      << log_.str();
  expect_reference(m.run(args(two)), two, kAnyBatch);
  EXPECT_FALSE(m.last_call().compiled);
  expect_reference(m.run(args(one)), one, kAnyBatch);  // the shape compiled as it is
  EXPECT_FALSE(m.last_call().compiled);
  EXPECT_EQ(m.compilations(), 2);
  expect_reference(m.run(args(six)), six, kAnyBatch);
  EXPECT_TRUE(m.last_call().compiled);
  EXPECT_NE(log_.str().find("varies (1 and 6): one artifact for sizes 1..8"), std::string::npos) << log_.str();
  EXPECT_EQ(m.compilations(), 3);
}

// dynamic over an image axis: padding would change the convolutions, so the
// new shape compiles as it is, said once, and still runs right.
TEST_F(JitModelTest, DynamicCompilesAShapeAsItIsWhenPaddingWouldChangeTheResult) {
  JitOptions o = options();
  o.dynamic = true;
  o.disk_cache = false;
  JitModel m("small", small_network, o);
  runtime::NDArray a({1, 3, 8, 8}), b({1, 3, 12, 8});
  a.fill_random(31);
  b.fill_random(32);
  m.run(args(a));
  const runtime::NDArray got = first(m.run(args(b)));
  EXPECT_NE(log_.str().find("cannot vary"), std::string::npos) << log_.str();
  EXPECT_NE(log_.str().find("compiling input shapes [1,3,12,8] as they are"), std::string::npos) << log_.str();
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(b.shape());
  std::copy(b.data(), b.data() + b.size(), inputs[0].data());
  const auto c = measure::compare_output(got, graph::interpret(small_network({b.shape()}), inputs)[0]);
  EXPECT_TRUE(c.ok) << c.describe();
  EXPECT_EQ(m.compilations(), 2);
}

TEST_F(JitModelTest, MaxAutotuneTunesWhatHasNoRecordThenBuildsWithIt) {
  JitOptions o = options(JitMode::kMaxAutotune);
  o.autotune_minutes = 0.05;  // 3 s over the tasks
  o.autotune_log = (cache_ / "small.autotune.log").string();
  runtime::NDArray x({1, 3, 8, 8});
  x.fill_random(11);
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(x.shape());
  std::copy(x.data(), x.data() + x.size(), inputs[0].data());
  const auto want = std::move(graph::interpret(small_network({x.shape()}), inputs)[0]);
  std::string key;
  {
    JitModel m("small", small_network, o);
    const auto c = measure::compare_output(first(m.run(args(x))), want);
    EXPECT_TRUE(c.ok) << c.describe();
    key = m.last_call().cache_key;
  }
  std::ifstream log(o.autotune_log);
  const auto lines = std::count(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>(), '\n');
  EXPECT_GT(lines, 0) << "max-autotune measured nothing";
  EXPECT_NE(log_.str().find("max-autotune"), std::string::npos) << log_.str();
  // A second process: every task has a record now, so nothing is tuned, and
  // the build with those records is on disk.
  JitModel again("small", small_network, o);
  again.run(args(x));
  EXPECT_TRUE(again.last_call().from_disk);
  EXPECT_EQ(again.last_call().cache_key, key);
}

TEST_F(JitModelTest, AShapeTheModelCannotTakeIsAnErrorNamingBoth) {
  JitModel m("narrow", model_source(kModel), options());
  runtime::NDArray wrong({1, 3, 100, 100});  // the model takes 64 x 64
  try {
    m.run(args(wrong));
    ADD_FAILURE() << "ran on a shape the model does not take";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got [1,3,100,100]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jit_mode_from_string("fast"), Error);
}

TEST_F(JitModelTest, ReduceOverheadReadsTheCallersBufferAndReusesItsOutputs) {
  JitModel m("narrow", model_source(kModel), options(JitMode::kReduceOverhead));
  const auto x = input(1, 9), y = input(1, 10);
  const float* out = m.run(args(x)).at(0).data;
  expect_reference(m.run(args(x)), x);
  const std::vector<JitOutput>& second = m.run(args(y));
  EXPECT_EQ(second.at(0).data, out);  // the same memory, overwritten
  expect_reference(second, y);
}

}  // namespace
}  // namespace tessera::jit
