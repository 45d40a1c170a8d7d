// Whole networks compiled for a GPU target: the OpenCL kernels run on the
// OpenCL device (PoCL's CPU device in CI) against the reference interpreter,
// and the artifact's GPU code survives writing and reading.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "../codegen/gpu_run_util.h"
#include "codegen/nvrtc_compiler.h"
#include "compile/build.h"
#include "driver/compile.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "graph/model_source.h"
#include "graph/zoo.h"
#include "measure/kernel_args.h"
#include "network_check.h"
#include "ops/attention.h"
#include "runtime/artifact.h"
#include "runtime/gpu_graph_executor.h"
#include "runtime/memory_plan.h"
#include "runtime/cuda_backend.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"

namespace tessera::build {
namespace {

void expect_gpu_matches_interpreter(const graph::Graph& model, const std::string& target_text) {
  const std::string why = target_text == "cuda" ? runtime::cuda_unavailable_reason() : runtime::opencl_unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << target_text << ": " << why;
  BuildResult built = build(model, target::Target::parse(target_text));
  ASSERT_TRUE(built.artifact.gpu.has_value());
  EXPECT_TRUE(built.artifact.shared_object.empty());
  const std::string path = ::testing::TempDir() + "gpu_build_test.tsr";
  runtime::write_artifact(built.artifact, path);
  runtime::GpuGraphExecutor ex = runtime::GpuGraphExecutor::load(path);
  std::filesystem::remove(path);
  std::vector<runtime::NDArray> inputs;
  for (int i = 0; i < ex.num_inputs(); ++i) {
    inputs.emplace_back(ex.input_shape(i));
    inputs.back().fill_random(9 + i);
    ex.set_input(i, inputs.back());
  }
  ex.run();
  const auto want = graph::interpret(model, inputs);
  const measure::OutputComparison c = measure::compare_output(ex.get_output(0), want[0], 1e-4);
  EXPECT_TRUE(c.ok) << c.describe();
}

TEST(GpuBuild, NarrowResnet18OnOpenClMatchesTheInterpreter) {
  expect_gpu_matches_interpreter(test::narrow_resnet18(), "opencl");
}

TEST(GpuBuild, NarrowResnet18OnCudaMatchesTheInterpreter) {
  expect_gpu_matches_interpreter(test::narrow_resnet18(), "cuda");
}

// --dtype float16: the weights and the values between kernels stored in half,
// the input and output in float32, the activations in half the bytes, and
// the network within the half tolerance of the fp32 interpreter (and off it
// by more than fp32 rounding: the halves are really there).
TEST(GpuBuild, HalfStorageNetworkOnOpenClIsWithinTheHalfTolerance) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  const target::Target opencl = target::Target::parse("opencl");
  BuildResult half = build(model, opencl, BuildOptions{.half_storage = true});
  const BuildResult full = build(model, opencl);
  const runtime::ExecutableGraph& g = half.artifact.graph;
  for (int t : g.inputs) EXPECT_FALSE(g.tensors[t].half) << g.tensors[t].name;
  for (int t : g.outputs) EXPECT_FALSE(g.tensors[t].half) << g.tensors[t].name;
  // Every other tensor is half: the constants, and each value between kernels
  // unless an output is (a view of) it.
  auto is_output_storage = [&](int t) {
    for (int o : g.outputs)
      if (g.storage_root(o) == g.storage_root(t)) return true;
    return false;
  };
  int fp32_between_kernels = 0;
  for (int t = 0; t < static_cast<int>(g.tensors.size()); ++t)
    if (!g.tensors[t].half && std::count(g.inputs.begin(), g.inputs.end(), t) == 0 && !is_output_storage(t))
      ++fp32_between_kernels;
  EXPECT_EQ(fp32_between_kernels, 0);
  EXPECT_LT(runtime::plan_memory(g).arena_bytes, runtime::plan_memory(full.artifact.graph).arena_bytes);

  // The artifact stores the weights in half (2 bytes less each), and the
  // loaded model computes exactly what the one in memory does.
  const std::string half_path = ::testing::TempDir() + "gpu_build_half.tsr";
  const std::string full_path = ::testing::TempDir() + "gpu_build_full.tsr";
  runtime::write_artifact(half.artifact, half_path);
  runtime::write_artifact(full.artifact, full_path);
  const auto half_size = std::filesystem::file_size(half_path), full_size = std::filesystem::file_size(full_path);
  int64_t constant_elements = 0;
  for (int t : g.constants) constant_elements += g.num_elements(t);
  EXPECT_GT(static_cast<double>(full_size) - static_cast<double>(half_size), 0.9 * 2 * constant_elements)
      << half_size << " of " << full_size << " bytes";
  runtime::GpuGraphExecutor loaded = runtime::GpuGraphExecutor::load(half_path);
  std::filesystem::remove(half_path);
  std::filesystem::remove(full_path);

  runtime::GpuGraphExecutor ex(std::move(half.artifact), "half");
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(ex.input_shape(0));
  inputs.back().fill_random(9);
  ex.set_input(0, inputs.back());
  ex.run();
  loaded.set_input(0, inputs.back());
  loaded.run();
  const auto want = graph::interpret(model, inputs);
  const runtime::NDArray got = ex.get_output(0);
  const measure::OutputComparison c = measure::compare_output(got, want[0], measure::kHalfNetworkTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
  EXPECT_GT(c.max_rel_error, 1e-5) << "no more error than fp32: were the tensors stored in half?";
  EXPECT_EQ(measure::compare_output(loaded.get_output(0), got, 0).max_abs_error, 0) << "the loaded artifact differs";
}

// The ungrouped convolutions of a graph, and how many of them run as one
// matrix product.
std::pair<int, int> convolutions_as_products(const graph::Graph& g) {
  int all = 0, products = 0;
  for (const graph::Node& n : g.nodes())
    if (n.op == graph::Op::kConv2d && n.attrs_as<ops::Conv2dAttrs>().groups == 1) {
      ++all;
      products += n.attrs_as<ops::Conv2dAttrs>().implicit_gemm;
    }
  return {all, products};
}

// Every ungrouped convolution of at least `positions` output positions is
// one matrix product, every other one direct; there are both.
void expect_products_where_positions_reach(const graph::Graph& g, int64_t positions) {
  int products = 0, direct = 0;
  for (const graph::Node& n : g.nodes()) {
    if (n.op != graph::Op::kConv2d || n.attrs_as<ops::Conv2dAttrs>().groups != 1) continue;
    const auto& out = n.type.shape;
    const bool product = n.attrs_as<ops::Conv2dAttrs>().implicit_gemm;
    EXPECT_EQ(product, out[0] * out[2] * out[3] >= positions) << n.name;
    (product ? products : direct) += 1;
  }
  EXPECT_GT(products, 0);
  EXPECT_GT(direct, 0);
}

// Half storage on a CUDA GPU with tensor cores computes every ungrouped
// convolution of at least 196 output positions as one matrix product (the
// form the tensor-core sketch tiles), the rest (the narrow ResNet's small
// images) directly; its kernels compile.
TEST(GpuBuild, HalfStorageCompilesWithNvrtcForAmpereAndHopper) {
  if (std::string why = codegen::nvrtc_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  for (const char* arch : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    const BuildResult built = build(test::narrow_resnet18(), target::Target::parse(arch), BuildOptions{.half_storage = true});
    ASSERT_TRUE(built.artifact.gpu.has_value()) << arch;
    EXPECT_TRUE(built.artifact.graph.has_half_tensors()) << arch;
    expect_products_where_positions_reach(built.optimized, kTensorCoreImplicitGemmMinPositions);
  }
  // Not in fp32, nor before sm_80.
  EXPECT_EQ(convolutions_as_products(optimize_for_target(test::narrow_resnet18(), target::Target::parse("cuda"))).second, 0);
  EXPECT_FALSE(implicit_gemm_convolutions(target::Target::parse("cuda -arch=sm_75"), true));
  EXPECT_TRUE(implicit_gemm_convolutions(target::Target::parse("cuda -arch=sm_90"), true));
  EXPECT_FALSE(implicit_gemm_convolutions(target::Target::parse("opencl"), true));
}

// In fp32 on CUDA the large convolutions run as one product each on CUDA
// cores (implicit_gemm_of: at least 3136 output positions over images of at
// least 14 x 14): ResNet-18 at batch 1 its stem and layer1 (5 of 20), at
// batch 16 all but layer4's 7 x 7 ones (15); none on OpenCL, nor with
// --convolutions direct; all with implicit-gemm.
TEST(GpuBuild, FloatConvolutionsOnCudaRunAsProductsWhereTheyAreLarge) {
  const target::Target cuda = target::Target::parse("cuda -arch=sm_90");
  auto products_at = [](int64_t batch, const target::Target& target, const BuildOptions& options) {
    graph::ModelOptions model;
    model.batch = batch;
    return convolutions_as_products(optimize_for_target(graph::load_model("resnet-18", model), target, {}, true, false,
                                                        implicit_gemm_of(options, target)));
  };
  EXPECT_EQ(products_at(1, cuda, {}), std::make_pair(20, 5));
  EXPECT_EQ(products_at(16, cuda, {}), std::make_pair(20, 15));
  EXPECT_EQ(products_at(16, target::Target::parse("opencl"), {}).second, 0);
  EXPECT_EQ(products_at(16, cuda, {.implicit_gemm = false}).second, 0);
  EXPECT_EQ(products_at(1, cuda, {.implicit_gemm = true}).second, 20);
}

int kernels_on_tensor_cores(const BuildResult& built) {
  int count = 0;
  for (const std::string& kernel : codegen::test::kernel_sources(built.artifact.gpu->source))
    count += kernel.find("tsr_tc_mma") != std::string::npos;  // either way its operands are loaded
  return count;
}

// `built` run on its device on inputs seeded by `seed`: its output against
// the interpreter's.
measure::OutputComparison compare_with_interpreter(BuildResult built, const graph::Graph& model, uint64_t seed,
                                                   double tolerance) {
  runtime::GpuGraphExecutor ex(std::move(built.artifact), "built");
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(ex.input_shape(0));
  inputs.back().fill_random(seed);
  ex.set_input(0, inputs.back());
  ex.run();
  return measure::compare_output(ex.get_output(0), graph::interpret(model, inputs)[0], tolerance);
}

// Untuned, a half network's matrix products whose sides are multiples of
// 16 run on tensor cores (the tensor-core template's fallback), the others
// (the 3-channel stem: 147 products an output) on CUDA cores; with
// untuned_tensor_cores off, or before sm_80, none.
TEST(GpuBuild, UntunedHalfProductsRunOnTensorCores) {
  if (std::string why = codegen::nvrtc_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  const target::Target sm90 = target::Target::parse("cuda -arch=sm_90");
  const BuildResult on = build(model, sm90, BuildOptions{.half_storage = true});
  const int convolutions = convolutions_as_products(on.optimized).first;
  const int tensor_core_kernels = kernels_on_tensor_cores(on);
  EXPECT_GT(tensor_core_kernels, 0) << on.artifact.gpu->source.substr(0, 2000);
  EXPECT_LT(tensor_core_kernels, convolutions);  // the stem's product is no multiple of 16
  EXPECT_EQ(kernels_on_tensor_cores(build(model, sm90, {.half_storage = true, .untuned_tensor_cores = false})), 0);
  EXPECT_EQ(kernels_on_tensor_cores(build(model, target::Target::parse("cuda -arch=sm_75"), {.half_storage = true})), 0);
}

// The same on a CUDA GPU: within the half tolerance of the interpreter.
TEST(GpuBuild, UntunedHalfNetworkOnCudaTensorCoresIsWithinTheHalfTolerance) {
  if (std::string why = runtime::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  BuildResult built = build(model, target::Target::parse("cuda"), BuildOptions{.half_storage = true});
  EXPECT_GT(kernels_on_tensor_cores(built), 0);
  const measure::OutputComparison c =
      compare_with_interpreter(std::move(built), model, 5, measure::kHalfNetworkTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
}

// A transformer layer as exporters write it, its sides multiples of 16 (32
// tokens, 2 heads of 32): q, k, v dense layers split into heads by
// transposes, scores scaled and softmaxed, the heads transposed back into
// the output's dense layer.
graph::Graph attention_layer() {
  graph::GraphBuilder b(17);
  const int64_t tokens = 32, heads = 2, d = 32, width = heads * d;
  const graph::NodeId x = b.input("x", {tokens, width});
  auto projected = [&](const std::string& name) {
    const graph::NodeId y = b.add(b.dense(x, b.random_constant(name + ".w", {width, width}, -0.2f, 0.2f)),
                                  b.random_constant(name + ".b", {width}, -0.1f, 0.1f));
    return b.transpose(b.reshape(y, {1, tokens, heads, d}), {0, 2, 1, 3});  // (1, heads, tokens, d)
  };
  const graph::NodeId q = b.reshape(projected("q"), {heads, tokens, d});
  const graph::NodeId k = b.reshape(projected("k"), {heads, tokens, d});
  const graph::NodeId vt = b.reshape(b.transpose(projected("v"), {0, 1, 3, 2}), {heads, d, tokens});
  graph::NodeId scores = b.reshape(b.batch_matmul(q, k), {1, heads, tokens, tokens});
  runtime::NDArray scale({1});
  scale[0] = 0.17677669f;  // 1 / sqrt(32)
  scores = b.multiply(scores, b.constant("scale", std::move(scale)));
  const graph::NodeId p = b.reshape(b.softmax(scores), {heads, tokens, tokens});
  const graph::NodeId out = b.reshape(b.batch_matmul(p, vt), {1, heads, tokens, d});
  const graph::NodeId rows = b.reshape(b.transpose(out, {0, 2, 1, 3}), {tokens, width});
  return b.finish({b.dense(rows, b.random_constant("o.w", {width, width}, -0.2f, 0.2f))});
}

// It is one attention reading its heads in place (no transposes left), its
// q, k and v one dense layer's output (packed), and
// in half and in TF32 on sm_90 it builds (the tensor-core fallback once took
// attention's DAG and threw, failing every such build of BERT-base), its
// dense layers on tensor cores; in half on PoCL it is within the half
// tolerance of the interpreter.
TEST(GpuBuild, AnAttentionLayerInHalfBuildsForTensorCoresAndMatchesTheInterpreter) {
  const graph::Graph model = attention_layer();
  const BuildResult opencl = build(model, target::Target::parse("opencl"), BuildOptions{.half_storage = true});
  int attention = 0, transposes = 0, packed = 0, dense = 0;
  for (const graph::Node& n : opencl.optimized.nodes()) {
    attention += n.op == graph::Op::named("attention");
    packed += n.op == graph::Op::named("attention") && n.attrs_as<ops::AttentionAttrs>().packed;
    dense += n.op == graph::Op::kDense;
    transposes += n.op == graph::Op::kTranspose;
  }
  EXPECT_EQ(attention, 1);
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(packed, 1);
  EXPECT_EQ(dense, 2);  // q, k and v's, and the output's
  if (codegen::nvrtc_unavailable_reason().empty()) {
    const BuildResult half =
        build(model, target::Target::parse("cuda -arch=sm_90"), BuildOptions{.half_storage = true});
    EXPECT_GT(kernels_on_tensor_cores(half), 0);
    const BuildResult tf32 = build(model, target::Target::parse("cuda -arch=sm_90 -tf32"), BuildOptions{});
    EXPECT_GT(kernels_on_tensor_cores(tf32), 0);
  }
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const measure::OutputComparison c =
      compare_with_interpreter(build(model, target::Target::parse("opencl"), BuildOptions{.half_storage = true}), model,
                               3, measure::kHalfNetworkTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
}

// MobileNet-v2's relu6 epilogues (a clip after a convolution and its bias)
// read their operand once (codegen/repeated_reads.h): in the CUDA source no
// store of a clipped value reads memory itself. On PoCL the narrow network
// in half is within the half tolerance of the interpreter.
TEST(GpuBuild, ClipEpiloguesReadTheirOperandOnce) {
  if (std::string why = codegen::nvrtc_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model =
      graph::import_onnx(std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/mobilenet_v2_narrow.onnx");
  const BuildResult cuda = build(model, target::Target::parse("cuda -arch=sm_90"), BuildOptions{.half_storage = true});
  int clips = 0;
  for (const std::string& kernel : codegen::test::kernel_sources(cuda.artifact.gpu->source)) {
    std::istringstream lines(kernel);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" > 6.0f ? 6.0f : ") == std::string::npos) continue;
      ++clips;
      EXPECT_EQ(line.find('[', line.find(" = ")), std::string::npos) << line;
    }
  }
  EXPECT_GE(clips, 10);  // 35 relu6 in MobileNet-v2, some fused into one kernel
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const measure::OutputComparison c = compare_with_interpreter(
      build(model, target::Target::parse("opencl"), BuildOptions{.half_storage = true}), model, 5,
      measure::kHalfNetworkTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
}

// BuildOptions::untuned_pipeline: the untuned kernels' steps pipelined
// (schedule/pipelined_steps.h). For sm_90 in half the kernels compile,
// their steps loading the next step's fetches under the step's bound
// (`if (k + 1 < K)`); on PoCL in fp32 (direct convolutions) the network
// equals the interpreter.
TEST(GpuBuild, UntunedPipelinedNetworksMatchTheInterpreter) {
  const graph::Graph model = test::narrow_resnet18();
  if (codegen::nvrtc_unavailable_reason().empty()) {
    const BuildResult cuda = build(model, target::Target::parse("cuda -arch=sm_90"),
                                   BuildOptions{.half_storage = true, .untuned_pipeline = true});
    const std::regex next_step(R"(if \(\w+ \+ 1 < \d+\))");
    int pipelined = 0;
    for (const std::string& kernel : codegen::test::kernel_sources(cuda.artifact.gpu->source))
      pipelined += std::regex_search(kernel, next_step);
    EXPECT_GT(pipelined, 5) << cuda.artifact.gpu->source.substr(0, 4000);
  }
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const measure::OutputComparison c = compare_with_interpreter(
      build(model, target::Target::parse("opencl"), BuildOptions{.untuned_pipeline = true}), model, 5, 1e-4);
  EXPECT_TRUE(c.ok) << c.describe();
}

// TF32 (a "cuda -tf32" target): an fp32 network's convolutions run as
// matrix products as half ones do, and those the untuned rule puts on tensor cores are
// written with mma.sync in TF32; without -tf32 none is.
TEST(GpuBuild, Fp32ProductsRunOnTensorCoresInTf32WhereTheTargetAllowsIt) {
  if (std::string why = codegen::nvrtc_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  const BuildResult tf32 = build(model, target::Target::parse("cuda -arch=sm_90 -tf32"), BuildOptions{});
  expect_products_where_positions_reach(tf32.optimized, kTensorCoreImplicitGemmMinPositions);
  const int on_tensor_cores = kernels_on_tensor_cores(tf32);
  EXPECT_GT(on_tensor_cores, 0) << tf32.artifact.gpu->source.substr(0, 2000);
  EXPECT_NE(tf32.artifact.gpu->source.find("m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
  EXPECT_EQ(kernels_on_tensor_cores(build(model, target::Target::parse("cuda -arch=sm_90"), BuildOptions{})), 0);
  // A transformer too: attention's products read computed values (the
  // softmax's), which only stored ones may be on tensor cores; it builds.
  const graph::Graph bert = graph::import_onnx(std::string(TESSERA_SOURCE_DIR) + "/tests/data/onnx/bert_tiny.onnx");
  EXPECT_NO_THROW(build(bert, target::Target::parse("cuda -arch=sm_90 -tf32"), BuildOptions{}));
}

// The same on a CUDA GPU: within the half tolerance of the fp32 interpreter
// (TF32 rounds the products' operands as half storage rounds values).
TEST(GpuBuild, Tf32NetworkOnCudaTensorCoresIsWithinTheHalfTolerance) {
  if (std::string why = runtime::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  const target::Target device = target::Target::parse("cuda");
  if (device.gpu.arch < 80) GTEST_SKIP() << device.gpu.arch_name() << " has no TF32 tensor cores";
  BuildResult built = build(model, target::Target::parse(device.str() + " -tf32"), BuildOptions{});
  EXPECT_GT(kernels_on_tensor_cores(built), 0);
  const measure::OutputComparison c =
      compare_with_interpreter(std::move(built), model, 5, measure::kHalfNetworkTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
}

// --convolutions chooses against the default: direct for a half network on
// sm_90, implicit-gemm for an fp32 one on OpenCL; anything else is one line.
TEST(GpuBuild, TheConvolutionsFlagOverridesTheDefault) {
  driver::CompileOptions direct;
  direct.dtype = "float16";
  direct.convolutions = "direct";
  direct.shipped_records = false;
  if (codegen::nvrtc_unavailable_reason().empty())
    EXPECT_EQ(convolutions_as_products(driver::compile(test::narrow_resnet18(), target::Target::parse("cuda -arch=sm_90"),
                                                       direct).optimized).second, 0);
  driver::CompileOptions products;
  products.convolutions = "implicit-gemm";
  products.shipped_records = false;
  const auto [convolutions, chosen] =
      convolutions_as_products(driver::compile(test::narrow_resnet18(), target::Target::parse("opencl"), products).optimized);
  EXPECT_EQ(chosen, convolutions);
  products.convolutions = "fft";
  try {
    driver::compile(test::narrow_resnet18(), target::Target::parse("opencl"), products);
    ADD_FAILURE() << "compiled";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--convolutions fft: auto, direct, implicit-gemm or winograd");
  }
}

// The same network with its convolutions as matrix products, untuned (the
// hand-written tiles of the product), on the OpenCL device.
TEST(GpuBuild, ConvolutionsAsMatrixProductsOnOpenClAreWithinTheHalfTolerance) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  BuildResult built =
      build(model, target::Target::parse("opencl"), BuildOptions{.half_storage = true, .implicit_gemm = true});
  const auto [convolutions, products] = convolutions_as_products(built.optimized);
  EXPECT_EQ(products, convolutions);
  const measure::OutputComparison c =
      compare_with_interpreter(std::move(built), model, 9, measure::kHalfNetworkTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
}

// --convolutions winograd on a GPU target: the 3x3 stride-1 convolutions
// with 16 channels or more run as Winograd in NCHW (their kernels say so),
// untuned (schedule::gpu_winograd_schedule), equal to the interpreter.
TEST(GpuBuild, WinogradConvolutionsOnOpenClEqualTheInterpreter) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const graph::Graph model = test::narrow_resnet18();
  driver::CompileOptions options;
  options.convolutions = "winograd";
  options.shipped_records = false;
  BuildResult built = driver::compile(model, target::Target::parse("opencl"), options);
  int winograd = 0;
  for (const graph::Node& n : built.optimized.nodes())
    if (n.op == graph::Op::kConv2d && n.attrs_as<ops::Conv2dAttrs>().winograd_tile > 0) ++winograd;
  EXPECT_GT(winograd, 0);
  int named = 0;
  for (const KernelSummary& k : built.kernels) named += k.name.ends_with("_conv2d_winograd");
  EXPECT_GT(named, 0);
  const measure::OutputComparison c = compare_with_interpreter(std::move(built), model, 4, measure::kDefaultTolerance);
  EXPECT_TRUE(c.ok) << c.describe();
}

TEST(GpuBuild, HalfStorageIsRefusedForACpuTarget) {
  try {
    build(test::narrow_resnet18(), target::Target::host(), BuildOptions{.half_storage = true});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--dtype float16: half storage runs on GPU targets"), std::string::npos)
        << e.what();
  }
}

// Every binary starts without a GPU: asking for the CUDA device there is one
// error saying why, not a crash at load time.
TEST(GpuBuild, WithoutACudaDriverTheBackendSaysWhy) {
  const std::string why = runtime::cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "this machine has a CUDA GPU";
  try {
    runtime::make_gpu_backend("cuda");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  EXPECT_FALSE(runtime::cuda_device_info().has_value());
}

}  // namespace
}  // namespace tessera::build
