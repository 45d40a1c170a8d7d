// The int8 convolution's inner loop on each x86 vector ISA: the blocked
// qlinear_conv2d under its hand-written schedule compiles to vpdpbusd on
// AVX-512 VNNI (zmm) and AVX-VNNI ({vex}, ymm), to vpmaddubsw + vpmaddwd on
// AVX2 and AVX-512BW without VNNI, and to widened integer arithmetic on SSE;
// each equals the integer reference exactly where this host runs it (the
// assembly is checked everywhere). A dot_product loop that is not the byte
// pattern runs as the serial loop it means.
#include "codegen/byte_dot_product.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <regex>
#include <tuple>
#include <utility>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "measure/storage_arguments.h"
#include "ops/conv2d.h"
#include "ops/qlinear_batch_matmul.h"
#include "ops/qlinear_conv2d.h"
#include "ops/qlinear_dense.h"
#include "ops/workloads.h"
#include "schedule/manual_schedule.h"
#include "target/target.h"
#include "testing/check.h"
#include "testing/qlinear_conv_case.h"
#include "tir/lower.h"

namespace tessera::codegen {
namespace {

using ops::Shape;
using Conv = testing::QLinearConvCase;

// Under the hand-written schedule (see testing::run_qlinear_conv).
double compiled_difference(const Conv& c, const target::Target& target, int most, std::string* assembly) {
  const ir::ComputeDAG dag = testing::qlinear_conv_dag(c);
  const testing::QLinearConvRun run = testing::run_qlinear_conv(
      c, dag, schedule::qlinear_conv2d_nchwc_schedule(dag, target.vector_unit()), target, most);
  *assembly = run.assembly;
  return run.difference;
}

std::vector<Conv> convolutions(int64_t block) {
  return {
      {{1, 32, 14, 14}, 2 * block, 3, ops::Conv2dAttrs::symmetric(1, 1), 16, block},
      {{1, 16, 15, 15}, block, 3, ops::Conv2dAttrs::symmetric(2, 1), 8, block},  // odd width: ragged tiles
      {{1, 64, 7, 7}, 2 * block, 1, ops::Conv2dAttrs::symmetric(1, 0), 16, block},  // flattened positions
      {{2, 8, 9, 9}, block, 3, ops::Conv2dAttrs::symmetric(1, 1), 4, block},       // one dot product per ic block
  };
}

struct Isa {
  const char* target;
  const char* instruction;  // a regular expression the assembly must match
  int most;                 // the weights' range the code is exact for
};

void expect_isa(const Isa& isa, int64_t block, bool centered = false) {
  const target::Target target = target::Target::parse(isa.target);
  for (Conv c : convolutions(block)) {
    c.centered = centered;
    SCOPED_TRACE(std::string(isa.target) + " " + ops::shape_to_string(c.x) + " k" + std::to_string(c.kernel));
    std::string assembly;
    const double off = compiled_difference(c, target, isa.most, &assembly);
    EXPECT_TRUE(std::regex_search(assembly, std::regex(isa.instruction))) << isa.instruction;
    if (off >= 0) EXPECT_EQ(off, 0.0);
  }
}

TEST(ByteDotProduct, TargetsChooseTheirInstruction) {
  EXPECT_EQ(target::Target::parse("llvm -mcpu=sapphirerapids").byte_dot, "vnni");
  EXPECT_EQ(target::Target::parse("llvm -mcpu=sapphirerapids").byte_dot_bits, 512);
  EXPECT_EQ(target::Target::parse("llvm -mcpu=alderlake").byte_dot, "vnni");
  EXPECT_EQ(target::Target::parse("llvm -mcpu=alderlake").byte_dot_bits, 256);
  EXPECT_EQ(target::Target::parse("llvm -mcpu=skylake-avx512").byte_dot, "pmaddubsw");
  EXPECT_EQ(target::Target::parse("llvm -mcpu=skylake-avx512").byte_dot_bits, 512);
  EXPECT_EQ(target::Target::parse("llvm -mcpu=haswell").byte_dot, "pmaddubsw");
  EXPECT_EQ(target::Target::parse("llvm -mcpu=x86-64").byte_dot, "");
}

TEST(ByteDotProduct, Avx512VnniIsOneVpdpbusdPerVector) {
  expect_isa({"llvm -mcpu=sapphirerapids", R"(vpdpbusd\s+.*%zmm)", 127}, 16);
}

TEST(ByteDotProduct, AvxVnniIsTheVexVpdpbusd) {
  expect_isa({"llvm -mcpu=alderlake", R"(\{vex\}\s*vpdpbusd\s+.*%ymm)", 127}, 8);
}

// vpmaddubsw adds two products in 16 bits, saturating: exact while a pair's
// sum fits, |w| <= 64 with unsigned bytes (what Tessera's quantizer keeps to
// for such targets, graph::QuantizeOptions).
TEST(ByteDotProduct, Avx2AndAvx512BwWithoutVnniArePmaddubswThenPmaddwd) {
  expect_isa({"llvm -mcpu=haswell", R"(vpmaddubsw\s+.*%ymm[\s\S]*vpmaddwd)", 64}, 8);
  expect_isa({"llvm -mcpu=skylake-avx512", R"(vpmaddubsw\s+.*%zmm[\s\S]*vpmaddwd)", 64}, 16);
}

// Centered products (ops::QLinearConv2dAttrs::centered) of weights across
// all of int8 (-128 clamped to -127): |x - 128| times the weight negated where
// x - 128 is, exact on the saturating instruction too.
TEST(ByteDotProduct, CenteredConvolutionsAreExactOnEveryInstruction) {
  expect_isa({"llvm -mcpu=haswell", R"(vpsignb\s+.*%ymm[\s\S]*vpmaddubsw\s+.*%ymm)", 128}, 8, true);
  expect_isa({"llvm -mcpu=skylake-avx512", R"(vpmaddubsw\s+.*%zmm)", 128}, 16, true);
  expect_isa({"llvm -mcpu=sapphirerapids", R"(vpdpbusd\s+.*%zmm)", 128}, 16, true);
}

TEST(ByteDotProduct, WithoutAnInstructionTheProductsAreWidenedExactly) {
  const target::Target sse = target::Target::parse("llvm -mcpu=x86-64");
  std::string assembly;
  for (const Conv& c : convolutions(4)) {
    SCOPED_TRACE(ops::shape_to_string(c.x));
    const double off = compiled_difference(c, sse, 127, &assembly);
    EXPECT_EQ(assembly.find("pmaddubsw"), std::string::npos);
    EXPECT_EQ(assembly.find("vpdpbusd"), std::string::npos);
    if (off >= 0) EXPECT_EQ(off, 0.0);
  }
}

// The int8 matrix product's packed weight (ops/qlinear_dense.h) under its
// hand-written schedule is the same pattern: a classifier's 512 x 1000 (40
// lanes a block: two vectors and a half on 512 bits) and a transformer's
// 12 rows. Its values are checked against the integer reference in
// tests/compile/quantized_dense_build_test.cc.
TEST(ByteDotProduct, TheInt8MatrixProductIsOneToo) {
  for (const auto& [target_text, instruction] :
       {std::pair{"llvm -mcpu=sapphirerapids", R"(vpdpbusd\s+.*%zmm)"},
        std::pair{"llvm -mcpu=alderlake", R"(\{vex\}\s*vpdpbusd\s+.*%ymm)"},
        std::pair{"llvm -mcpu=haswell", R"(vpmaddubsw)"}})
    for (const auto& [m, n, k] : {std::tuple{1, 1000, 512}, std::tuple{12, 256, 128}}) {
      const target::Target target = target::Target::parse(target_text);
      const int64_t bn = ops::qlinear_dense_block(n, k);
      const ir::Tensor x = ir::placeholder({m, k}, "x", ir::DType::UInt8);
      const ir::Tensor w = ir::placeholder({n / bn, k / 4, bn, 4}, "w", ir::DType::Int8);
      const ir::Tensor scale = ir::placeholder({n}, "w_scale"), bias = ir::placeholder({n}, "bias", ir::DType::Int32);
      const ir::ComputeDAG dag({ops::qlinear_dense_pack(x, w, scale, bias, ops::QLinearDenseAttrs{})});
      const std::string assembly = emit_assembly(
          tir::lower(dag, schedule::qlinear_dense_pack_schedule(dag, target.vector_unit()), "qdense"), target);
      EXPECT_TRUE(std::regex_search(assembly, std::regex(instruction))) << target_text << " " << m << "x" << n;
    }
}

// The centered int8 matrix product (ops::QLinearDenseAttrs::centered): the
// accumulator of sum_k (x - 128) * max(w, -127) over every byte x (0 and
// 255 among them) and every weight (-128 among them, which the clamp makes
// -127), under the hand-written schedule: as |x - 128| times the weight
// negated where x - 128 is, on pmaddubsw (psignb on AVX2, a select on
// AVX-512BW) exact where the plain products of these bytes saturate, and
// on vpdpbusd and widened arithmetic too; equal to the integer reference
// exactly on each ISA this host runs (the assembly checked everywhere).
TEST(ByteDotProduct, CenteredProductsAreExactForEveryByteOnEveryIsa) {
  const int64_t m = 7, n = 128, k = 96, bn = ops::qlinear_dense_block(n, k);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> bytes(0, 255), weights(-128, 127);
  runtime::NDArray x({m, k}), w({n, k});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i < 2 * k ? (i % 2) * 255 : bytes(rng));
  for (int64_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5 == 0 ? (i % 2 ? 127 : -128) : weights(rng));
  runtime::NDArray packed({n / bn, k / 4, bn, 4});
  const std::vector<float> p = ops::pack_qlinear_dense_weight(w.data(), n, k, bn);
  std::copy(p.begin(), p.end(), packed.data());
  // The independent reference: the sums in 64-bit integers.
  std::vector<int64_t> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l)
        want[i * n + j] += (static_cast<int64_t>(x[i * k + l]) - 128) * std::max<int64_t>(w[j * k + l], -127);

  for (const auto& [target_text, instruction] :
       {std::pair{"llvm -mcpu=haswell", R"(vpsignb\s+.*%ymm[\s\S]*vpmaddubsw\s+.*%ymm)"},
        std::pair{"llvm -mcpu=skylake-avx512", R"(vpmaddubsw\s+.*%zmm)"},
        std::pair{"llvm -mcpu=sapphirerapids", R"(vpdpbusd\s+.*%zmm)"}, std::pair{"llvm -mcpu=x86-64", R"(pmul)"}}) {
    SCOPED_TRACE(target_text);
    const target::Target target = target::Target::parse(target_text);
    ops::QLinearDenseAttrs attrs;
    attrs.packed = attrs.centered = true;
    const ir::Tensor xt = ir::placeholder({m, k}, "x", ir::DType::UInt8);
    const ir::Tensor wt = ir::placeholder(packed.shape(), "w", ir::DType::Int8);
    const ir::Tensor scale = ir::placeholder({n}, "w_scale"), bias = ir::placeholder({n}, "bias", ir::DType::Int32);
    const ir::ComputeDAG whole({ops::qlinear_dense_pack(xt, wt, scale, bias, attrs)});
    ir::Tensor acc;
    for (const ir::Tensor& t : whole.tensors())
      if (t->tag == "qlinear_dense_pack") acc = t;
    const ir::ComputeDAG dag({acc});
    const tir::LoweredFunc f =
        tir::lower(dag, schedule::qlinear_dense_pack_schedule(dag, target.vector_unit()), "centered");
    const std::string assembly = emit_assembly(f, target);
    EXPECT_TRUE(std::regex_search(assembly, std::regex(instruction))) << instruction;
    if (!target.missing_on(target::Target::host()).empty()) continue;
    std::vector<runtime::NDArray> inputs, outputs;
    for (const ir::Tensor& t : dag.placeholders()) inputs.push_back(runtime::copy_of(t->name == "x" ? x : packed));
    outputs.emplace_back(acc->shape);
    codegen::Module module = codegen::Module::load_object(codegen::compile_to_object(f, target));
    measure::StorageArguments args(dag, inputs, outputs);
    module.function("centered")(args.pointers());
    args.outputs_to_arrays();
    int64_t wrong = 0;
    for (int64_t i = 0; i < m * n; ++i) wrong += static_cast<int64_t>(outputs[0][i]) != want[i];
    EXPECT_EQ(wrong, 0) << "of " << m * n << " sums, e.g. " << outputs[0][0] << " for " << want[0];
  }
}

// The product of two int8 activations (ops/qlinear_batch_matmul.h) by the
// byte dot product, under its hand-written schedule: attention's 12 heads
// of 128 x 64 by 64 x 128 (and a ragged 12-column one). Its values are
// checked against the integer reference in
// tests/graph/fuse_quantized_operators_test.cc.
TEST(ByteDotProduct, TheInt8BatchProductIsOneToo) {
  // (12 columns on AVX-512: a 256-bit and a 128-bit piece.)
  for (const auto& [target_text, instruction] : {std::pair{"llvm -mcpu=sapphirerapids", R"(vpdpbusd\s+.*%[zy]mm)"},
                                                 std::pair{"llvm -mcpu=alderlake", R"(\{vex\}\s*vpdpbusd\s+.*%ymm)"}})
    for (const auto& [m, n, k] : {std::tuple{128, 128, 64}, std::tuple{8, 12, 16}}) {
      const target::Target target = target::Target::parse(target_text);
      ops::QLinearBatchMatmulAttrs attrs;
      attrs.a = {0.03f, 10, "uint8"};
      attrs.b = {0.02f, 128, "uint8"};
      attrs.output = {0.03f, 0.5f, 100, "uint8", false, 0.0f};
      attrs.byte_dot = true;
      const ir::Tensor a = ir::placeholder({12, m, k}, "a", ir::DType::UInt8);
      const ir::Tensor b = ir::placeholder({12, n, k}, "b", ir::DType::UInt8);
      const ir::ComputeDAG dag({ops::qlinear_batch_matmul(a, b, attrs)});
      const std::string assembly =
          emit_assembly(tir::lower(dag, schedule::best_manual_schedule(dag, target.vector_unit()), "qbmm"), target);
      EXPECT_TRUE(std::regex_search(assembly, std::regex(instruction))) << target_text << " " << m << "x" << n;
    }
}

// An fp32 convolution whose innermost reduce loop is marked dot_product is
// not the byte pattern: it runs serially and stays correct.
TEST(ByteDotProduct, AnotherLoopMarkedDotProductRunsSerially) {
  const ops::Workload w =
      ops::conv2d_nchwc_workload({1, 2, 6, 6, 4}, {2, 2, 3, 3, 4, 8}, ops::Conv2dAttrs::symmetric(1, 1));
  schedule::Trace t = schedule::conv2d_nchwc_schedule(w.dag, target::Target::host().vector_unit());
  const ir::Tensor conv = w.dag.outputs()[0];
  t.annotate(schedule::cache_write_name(conv->name), "ic_inner", schedule::Annotation::DotProduct);
  const testing::CheckResult r = testing::check_schedule(w, t);
  EXPECT_NE(r.lowered.find("dot_product"), std::string::npos) << r.lowered;
  EXPECT_LE(r.max_rel_error, 1e-5) << r.lowered;
}

}  // namespace
}  // namespace tessera::codegen
