// --target vta end to end: a network quantized with power-of-two scales,
// packed, compiled into one artifact whose packed convolutions are VTA
// programs and the rest CPU kernels; run, each of its integer kernels equals
// the integer reference exactly on its compiled inputs (the accelerator's
// among them), the logits equal the quantized graph interpreted whole, the
// simulator counted every multiply-accumulate of the packed convolutions,
// and the artifact survives a write and a read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/compile.h"
#include "driver/kernel_check.h"
#include "graph/interpreter.h"
#include "graph/zoo.h"
#include "ops/conv2d_packed.h"
#include "runtime/artifact.h"
#include "runtime/graph_executor.h"
#include "tessera/error.h"
#include "testing/small_resnet.h"

namespace tessera::driver {
namespace {

struct VtaRun {
  build::BuildResult built;
  std::vector<runtime::NDArray> inputs;
  std::string notes;
};

// Compiles `model` for vta and checks what one run computed; returns the build for more checks.
VtaRun compile_and_check(const graph::Graph& model, int64_t want_packed,
                         const target::Target& target = target::Target::parse("vta")) {
  CompileOptions o;
  o.shipped_records = false;
  std::ostringstream notes;
  o.warnings = &notes;
  VtaRun r{compile(model, target, o), {}, ""};
  r.notes = notes.str();
  EXPECT_TRUE(r.built.artifact.vta.has_value());
  int64_t packed = 0, macs = 0;
  for (const graph::Node& n : r.built.optimized.nodes())
    if (graph::op_name(n.op) == "conv2d_packed") ++packed, macs += n.attrs_as<ops::Conv2dPackedAttrs>().macs();
  EXPECT_EQ(packed, want_packed);

  runtime::GraphExecutor ex(runtime::copy_artifact(r.built.artifact), "vta", /*keep_every_tensor=*/true);
  r.inputs.push_back(ex.random_input(0, 5));
  ex.set_input(0, r.inputs[0]);
  ex.run();
  const KernelCheck check = check_each_kernel(r.built.optimized, ex, r.inputs);
  EXPECT_GE(check.integer_values, packed);
  EXPECT_TRUE(check.exact()) << check.first_difference;
  EXPECT_EQ(check.integer_within_one, 0);
  // Whole: the integers along the network are the reference's, so the float
  // logits after them differ only by the float kernels' rounding.
  const std::vector<runtime::NDArray> want = graph::interpret(r.built.optimized, r.inputs);
  const runtime::NDArray got = ex.get_output(0);
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    worst = std::max<double>(worst, std::fabs(got.data()[i] - want[0].data()[i]));
    largest = std::max<double>(largest, std::fabs(want[0].data()[i]));
  }
  EXPECT_LE(worst, 1e-5 * largest);
  // The simulator ran every packed call's products, and each took cycles.
  int64_t simulated_macs = 0, calls = 0;
  for (size_t i = 0; i < ex.graph().calls.size(); ++i) {
    if (!ex.is_accelerator_call(i)) continue;
    ++calls;
    simulated_macs += ex.accelerator_stats()[i].gemm_macs;
    EXPECT_GT(ex.accelerator_stats()[i].cycles, 0);
  }
  EXPECT_EQ(calls, packed);
  EXPECT_EQ(simulated_macs, macs);
  // A profile times the accelerator's calls by their simulated cycles, not the host's simulating.
  const std::vector<double> seconds = ex.profile(1);
  for (size_t i = 0; i < seconds.size(); ++i)
    if (ex.is_accelerator_call(i))
      EXPECT_DOUBLE_EQ(seconds[i], ex.accelerator_config().seconds(ex.accelerator_stats()[i].cycles));
  return r;
}

TEST(VtaCompile, ASmallResNetRunsOnTheSimulatorAsTheIntegerReference) {
  VtaRun r = compile_and_check(testing::small_resnet(), 5);
  EXPECT_NE(r.notes.find("note: --target vta: 5 convolutions run on VTA (2 residual adds fused into them)"),
            std::string::npos)
      << r.notes;
  // Written and read back, the artifact computes the same logits.
  const std::string path = (std::filesystem::temp_directory_path() / "tessera_vta_small.tsr").string();
  runtime::write_artifact(r.built.artifact, path);
  runtime::GraphExecutor first(runtime::copy_artifact(r.built.artifact), "memory");
  runtime::GraphExecutor second = runtime::GraphExecutor::load(path);
  for (runtime::GraphExecutor* ex : {&first, &second}) {
    ex->set_input(0, r.inputs[0]);
    ex->run();
  }
  const runtime::NDArray a = first.get_output(0), b = second.get_output(0);
  EXPECT_EQ(std::vector<float>(a.data(), a.data() + a.size()), std::vector<float>(b.data(), b.data() + b.size()));
  std::filesystem::remove(path);
}

TEST(VtaCompile, ConvolutionsVtaCannotRunStayOnTheCpuAndAreNamed) {
  VtaRun r = compile_and_check(testing::small_resnet(/*narrow=*/true), 2);
  EXPECT_NE(r.notes.find("3 stay on the CPU:"), std::string::npos) << r.notes;
  EXPECT_NE(r.notes.find("block2.conv1"), std::string::npos) << r.notes;
}

// The architecture as data: an 8x8 GEMM core with half the buffers packs the
// narrow network's 24-channel convolutions too (blocks of 8), and the whole
// flow follows the configuration the target names.
TEST(VtaCompile, AnotherVtaConfigurationIsCompiledForAsTheTargetNamesIt) {
  const std::string path = (std::filesystem::temp_directory_path() / "tessera_vta_8x8.json").string();
  {
    std::ofstream f(path);
    f << R"({"TARGET": "sim", "LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16,
             "LOG_ACC_BUFF_SIZE": 16})";
  }
  const target::Target target = target::Target::parse("vta -config=" + path);
  EXPECT_NE(target.accelerator_config.find("\"LOG_BLOCK\":3"), std::string::npos) << target.str();
  // The target's string carries the configuration, so records and artifacts name it.
  EXPECT_EQ(target::Target::parse(target.str()).accelerator_config, target.accelerator_config);
  EXPECT_NE(target.match_key(), target::Target::parse("vta").match_key());
  VtaRun r = compile_and_check(testing::small_resnet(/*narrow=*/true), 5, target);
  EXPECT_EQ(r.built.artifact.vta->config.block_in(), 8);
  EXPECT_EQ(r.built.artifact.vta->config.inp_depth(), 2048);
  for (const graph::Node& n : r.built.optimized.nodes())
    if (graph::op_name(n.op) == "conv2d_packed") EXPECT_EQ(n.attrs_as<ops::Conv2dPackedAttrs>().block_out, 8);
  EXPECT_THROW(target::Target::parse("vta -config=" + path + ".missing"), Error);
  std::filesystem::remove(path);
}

TEST(VtaCompile, APackedConvolutionOnAnotherTargetIsRefusedNamingIt) {
  const graph::Graph packed =
      vta_graph(testing::small_resnet(), target::Target::parse("vta"), CompileOptions{.shipped_records = false}, {});
  try {
    build::build_optimized(packed, packed, target::Target::host(), {});
    FAIL() << "built";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_packed runs on the VTA accelerator; compile for --target vta"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(target::Target::parse("vta -mcpu=nosuchcpu"), Error);
  EXPECT_EQ(target::Target::parse("vta -threads=1").str().substr(0, 4), "vta ");
}

TEST(VtaCompile, ADamagedVtaSectionIsNamed) {
  runtime::VtaCode code;
  nlohmann::json j = code.to_json();
  j["kernels"] = nlohmann::json::array({{{"name", "k"}, {"instructions", "abc"}}});
  try {
    runtime::VtaCode::from_json(j, "artifact 'm.tsr'");
    FAIL() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("artifact 'm.tsr': section vta"), std::string::npos) << e.what();
  }
}

// Seed 003's network: 19 convolutions on VTA, the rest on the CPU, every
// integer kernel the reference's.
TEST(VtaResNet18, EveryPackedConvolutionEqualsTheIntegerReference) {
  VtaRun r = compile_and_check(graph::get_network("resnet-18"), 19);
  EXPECT_NE(r.notes.find("19 convolutions run on VTA (8 residual adds fused into them)"), std::string::npos) << r.notes;
}

}  // namespace
}  // namespace tessera::driver
