#include "codegen/llvm_codegen.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <thread>
#include <tuple>

#include "codegen/lane_analysis.h"
#include "kernel_test_util.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::codegen {
namespace {

using namespace testing;  // NOLINT
using runtime::NDArray;

// C[i, j] = sum_k A[i, k] * B[k, j] with plain loops, the reference.
NDArray reference_matmul(const NDArray& a, const NDArray& b) {
  int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  NDArray c({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t r = 0; r < k; ++r) sum += a[i * k + r] * b[r * n + j];
      c[i * n + j] = sum;
    }
  return c;
}

void expect_near_all(const NDArray& actual, const NDArray& expected, float tolerance = 1e-4f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (int64_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance) << "at flat index " << i;
  }
}

// The straightforward matmul nest; j's loop kind is a parameter.
tir::LoweredFunc matmul_kernel(int64_t m, int64_t n, int64_t k, ForKind i_kind = ForKind::Serial,
                               ForKind j_kind = ForKind::Serial) {
  Tensor A = ir::placeholder({m, k}, "A"), B = ir::placeholder({k, n}, "B"), C = ir::placeholder({m, n}, "C");
  Var i("i"), j("j"), r("k");
  Stmt init = tir::make_store(C, {i, j}, 0.0f);
  Stmt update = tir::make_store(C, {i, j}, at(C, {i, j}) + at(A, {i, r}) * at(B, {r, j}));
  Stmt body = loop(i, m,
                   tir::make_seq({loop(j, n, init, j_kind), loop(r, k, loop(j, n, update, j_kind))}),
                   i_kind);
  return kernel({A, B, C}, body);
}

TEST(CodegenLLVM, ElementwiseAddMatchesReference) {
  Tensor A = ir::placeholder({1000}, "A"), B = ir::placeholder({1000}, "B"), C = ir::placeholder({1000}, "C");
  Var i("i");
  auto f = kernel({A, B, C}, loop(i, 1000, tir::make_store(C, {i}, at(A, {i}) + at(B, {i}))));
  NDArray a({1000}), b({1000}), c({1000});
  a.fill_random(1), b.fill_random(2);
  run(f, {&a, &b, &c});
  for (int64_t x = 0; x < 1000; ++x) ASSERT_FLOAT_EQ(c[x], a[x] + b[x]);
}

TEST(CodegenLLVM, MatmulWithReductionMatchesReference) {
  auto f = matmul_kernel(37, 29, 23);
  NDArray a({37, 23}), b({23, 29}), c({37, 29});
  a.fill_random(3), b.fill_random(4);
  run(f, {&a, &b, &c});
  expect_near_all(c, reference_matmul(a, b));
}

TEST(CodegenLLVM, VectorisedInnerLoopBecomesVectorFma) {
  auto f = matmul_kernel(8, 32, 16, ForKind::Serial, ForKind::Vectorized);
  NDArray a({8, 16}), b({16, 32}), c({8, 32});
  a.fill_random(5), b.fill_random(6);
  run(f, {&a, &b, &c});
  expect_near_all(c, reference_matmul(a, b));
  std::string ir = emit_llvm_ir(f, Target::host());
  EXPECT_NE(ir.find("@llvm.fmuladd.v32f32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("load <32 x float>"), std::string::npos) << ir;
}

// A vector loop of no power of two runs as pieces that are (24: 16 then 8;
// 7: 4, 2, then a scalar lane), each piece reading and writing its own lanes.
TEST(CodegenLLVM, VectorLoopsOfOddWidthRunAsPowerOfTwoPieces) {
  for (int64_t n : {24, 7}) {
    SCOPED_TRACE(n);
    auto f = matmul_kernel(5, n, 9, ForKind::Serial, ForKind::Vectorized);
    NDArray a({5, 9}), b({9, n}), c({5, n});
    a.fill_random(7), b.fill_random(8);
    run(f, {&a, &b, &c});
    expect_near_all(c, reference_matmul(a, b));
    const std::string ir = emit_llvm_ir(f, Target::host());
    EXPECT_EQ(ir.find("x float> @llvm.fmuladd.v" + std::to_string(n) + "f32"), std::string::npos) << ir;
    for (const char* piece : n == 24 ? std::vector<const char*>{"v16f32", "v8f32"} : std::vector<const char*>{"v4f32", "v2f32"})
      EXPECT_NE(ir.find(std::string("@llvm.fmuladd.") + piece), std::string::npos) << piece << "\n" << ir;
  }
}

// A 4x16 accumulator tile: rows unrolled, columns vectorised, reduction loop
// outside them. The tile must live in ymm registers across the k loop.
tir::LoweredFunc register_blocked_matmul(int64_t m, int64_t n, int64_t k, ForKind outer_kind) {
  constexpr int64_t kRows = 4, kCols = 16;
  Tensor A = ir::placeholder({m, k}, "A"), B = ir::placeholder({k, n}, "B"), C = ir::placeholder({m, n}, "C");
  Tensor tile = ir::placeholder({kRows, kCols}, "C_local");
  Var io("i_outer"), jo("j_outer"), ii("i_inner"), ji("j_inner"), r("k");
  auto over_tile = [&](Stmt s) {
    return loop(ii, kRows, loop(ji, kCols, std::move(s), ForKind::Vectorized), ForKind::Unrolled);
  };
  Expr row = io * kRows + ii, col = jo * kCols + ji;
  Stmt body = tir::make_allocate(
      tile, tir::make_seq({
                over_tile(tir::make_store(tile, {ii, ji}, 0.0f)),
                loop(r, k, over_tile(tir::make_store(tile, {ii, ji}, at(tile, {ii, ji}) + at(A, {row, r}) * at(B, {r, col})))),
                over_tile(tir::make_store(C, {row, col}, at(tile, {ii, ji}))),
            }));
  return kernel({A, B, C}, loop(io, m / kRows, loop(jo, n / kCols, body), outer_kind));
}

TEST(CodegenLLVM, RegisterTileMatchesTheReferenceOnThisHost) {
  auto f = register_blocked_matmul(16, 64, 32, ForKind::Serial);
  NDArray a({16, 32}), b({32, 64}), c({16, 64});
  a.fill_random(7), b.fill_random(8);
  run(f, {&a, &b, &c});
  expect_near_all(c, reference_matmul(a, b));
  // SROA promoted the whole tile: no stack memory is left.
  std::string ir = emit_llvm_ir(f, Target::host());
  EXPECT_EQ(ir.find("alloca"), std::string::npos) << ir;
}

// The same kernel compiled for each vector width, whatever this host is: on
// AVX2 (Zen 3, Haswell) the 16-wide columns become pairs of ymm registers and
// the 4x16 tile (8 ymm) fits without spills; on AVX-512 one zmm each.
TEST(CodegenLLVM, RegisterTileUsesFmaOfEachWidthWithoutStackTraffic) {
  auto f = register_blocked_matmul(16, 64, 32, ForKind::Serial);
  for (const auto& [target, used, unused] :
       {std::tuple{"llvm -mcpu=znver3", "%ymm", "zmm"}, std::tuple{"llvm -mcpu=haswell", "%ymm", "zmm"},
        std::tuple{"llvm -mcpu=skylake-avx512", "%zmm", "ymm"}}) {
    SCOPED_TRACE(target);
    std::string assembly = emit_assembly(f, Target::parse(target));
    EXPECT_TRUE(std::regex_search(assembly, std::regex(std::string(R"(vfmadd\w+\s+.*)") + used))) << assembly;
    EXPECT_FALSE(std::regex_search(assembly, std::regex(std::string(R"(vfmadd\w+\s+.*%)") + unused))) << assembly;
    EXPECT_EQ(assembly.find("(%rsp)"), std::string::npos) << assembly;
  }
}

TEST(CodegenLLVM, ParallelLoopIsCorrectWithOneAndTwoThreads) {
  auto f = register_blocked_matmul(32, 32, 20, ForKind::Parallel);
  NDArray a({32, 20}), b({20, 32});
  a.fill_random(9), b.fill_random(10);
  NDArray expected = reference_matmul(a, b);
  for (int threads : {1, 2}) {
    runtime::set_num_threads(threads);
    NDArray c({32, 32});
    run(f, {&a, &b, &c});
    expect_near_all(c, expected);
  }
  runtime::set_num_threads(0);
}

TEST(CodegenLLVM, ParallelBodySeesOuterLoopVariablesAndNestedParallelRunsSerially) {
  Tensor A = ir::placeholder({3, 50, 4}, "A"), C = ir::placeholder({3, 50, 4}, "C");
  Var i("i"), j("j"), l("l");
  Stmt store = tir::make_store(C, {i, j, l}, at(A, {i, j, l}) * 2.0f + ir::cast(ir::DType::Float32, i * 10 + l));
  auto f = kernel({A, C}, loop(i, 3, loop(j, 50, loop(l, 4, store, ForKind::Parallel), ForKind::Parallel)));
  runtime::set_num_threads(2);
  NDArray a({3, 50, 4}), c({3, 50, 4});
  a.fill_random(11);
  run(f, {&a, &c});
  runtime::set_num_threads(0);
  for (int64_t x = 0; x < 3; ++x)
    for (int64_t y = 0; y < 50; ++y)
      for (int64_t z = 0; z < 4; ++z) {
        int64_t flat = (x * 50 + y) * 4 + z;
        ASSERT_FLOAT_EQ(c[flat], a[flat] * 2.0f + static_cast<float>(x * 10 + z));
      }
}

// 50 elements in vectors of 16: the last vector is guarded, both as a serial
// loop and as a masked vector loop; the guard's else branch writes too.
TEST(CodegenLLVM, NonDivisibleGuardTouchesOnlyValidElements) {
  for (ForKind inner : {ForKind::Serial, ForKind::Vectorized}) {
    Tensor A = ir::placeholder({50}, "A"), C = ir::placeholder({50}, "C"), D = ir::placeholder({64}, "D");
    Var jo("jo"), ji("ji");
    Expr idx = jo * 16 + ji;
    Stmt guarded = tir::make_seq({
        tir::make_if(idx < 50, tir::make_store(C, {idx}, at(A, {idx}) + 1.0f)),
        tir::make_if(idx < 50, tir::make_store(D, {idx}, 1.0f), tir::make_store(D, {idx}, -1.0f)),
    });
    auto f = kernel({A, C, D}, loop(jo, 4, loop(ji, 16, guarded, inner)));
    // C gets a canary element right after its 50 valid ones.
    NDArray a({50}), c({51}), d({64});
    a.fill_random(12);
    c[50] = 42.0f;
    run(f, {&a, &c, &d});
    for (int64_t x = 0; x < 50; ++x) ASSERT_FLOAT_EQ(c[x], a[x] + 1.0f);
    EXPECT_EQ(c[50], 42.0f);
    for (int64_t x = 0; x < 64; ++x) ASSERT_EQ(d[x], x < 50 ? 1.0f : -1.0f);
  }
}

TEST(CodegenLLVM, FloorDivAndModRoundTowardsNegativeInfinity) {
  Tensor Q = ir::placeholder({21}, "Q"), R = ir::placeholder({21}, "R");
  Tensor T = ir::placeholder({21}, "T"), S = ir::placeholder({21}, "S");
  Tensor QN = ir::placeholder({21}, "QN"), RN = ir::placeholder({21}, "RN");
  Var i("i");
  Expr x = i - 10;
  auto as_float = [](Expr e) { return ir::cast(ir::DType::Float32, std::move(e)); };
  Stmt body = tir::make_seq({
      tir::make_store(Q, {i}, as_float(ir::floordiv(x, 3))),
      tir::make_store(R, {i}, as_float(ir::floormod(x, 3))),
      tir::make_store(T, {i}, as_float(x / 3)),
      tir::make_store(S, {i}, as_float(x % 3)),
      tir::make_store(QN, {i}, as_float(ir::floordiv(x, -4))),
      tir::make_store(RN, {i}, as_float(ir::floormod(x, -4))),
  });
  for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
    auto f = kernel({Q, R, T, S, QN, RN}, loop(i, 21, body, kind));
    NDArray q({21}), r({21}), t({21}), s({21}), qn({21}), rn({21});
    run(f, {&q, &r, &t, &s, &qn, &rn});
    for (int64_t v = -10; v <= 10; ++v) {
      int64_t floor_q = v >= 0 ? v / 3 : -((-v + 2) / 3);
      ASSERT_EQ(q[v + 10], floor_q) << v;
      ASSERT_EQ(r[v + 10], v - 3 * floor_q) << v;
      ASSERT_EQ(t[v + 10], v / 3) << v;
      ASSERT_EQ(s[v + 10], v % 3) << v;
      int64_t floor_qn = static_cast<int64_t>(std::floor(v / -4.0));
      ASSERT_EQ(qn[v + 10], floor_qn) << v;
      ASSERT_EQ(rn[v + 10], v - (-4) * floor_qn) << v;
    }
  }
}

TEST(CodegenLLVM, MathCallsMaxAndSelectMatchReference) {
  Tensor A = ir::placeholder({64}, "A");
  std::vector<Tensor> outs;
  for (const char* name : {"E", "M", "S", "T", "G", "L"}) outs.push_back(ir::placeholder({64}, name));
  Var i("i");
  Expr a = at(A, {i});
  Stmt body = tir::make_seq({
      tir::make_store(outs[0], {i}, ir::exp(a)),
      tir::make_store(outs[1], {i}, ir::max(a, -0.25f) + ir::min(a, 0.5f)),
      tir::make_store(outs[2], {i}, ir::select(a > 0.0f, a * 3.0f, a - 1.0f)),
      tir::make_store(outs[3], {i}, ir::call("tanh", {a})),
      tir::make_store(outs[4], {i}, ir::call("sigmoid", {a})),
      tir::make_store(outs[5], {i}, ir::call("log", {ir::call("sqrt", {ir::call("fabs", {a})}) + 1.0f})),
  });
  for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
    std::vector<Tensor> args = {A};
    args.insert(args.end(), outs.begin(), outs.end());
    auto f = kernel(args, loop(i, 64, body, kind));
    std::vector<NDArray> arrays;
    arrays.emplace_back(std::vector<int64_t>{64});
    for (size_t n = 0; n < outs.size(); ++n) arrays.emplace_back(std::vector<int64_t>{64});
    arrays[0].fill_random(13, -3.f, 3.f);
    std::vector<NDArray*> pointers;
    for (NDArray& x : arrays) pointers.push_back(&x);
    run(f, pointers);
    for (int64_t x = 0; x < 64; ++x) {
      float v = arrays[0][x];
      ASSERT_NEAR(arrays[1][x], std::exp(v), 1e-5f * std::exp(v));
      ASSERT_FLOAT_EQ(arrays[2][x], std::max(v, -0.25f) + std::min(v, 0.5f));
      ASSERT_FLOAT_EQ(arrays[3][x], v > 0 ? v * 3.0f : v - 1.0f);
      ASSERT_NEAR(arrays[4][x], std::tanh(v), 1e-6f);
      ASSERT_NEAR(arrays[5][x], 1.0f / (1.0f + std::exp(-v)), 1e-6f);
      ASSERT_NEAR(arrays[6][x], std::log(std::sqrt(std::fabs(v)) + 1.0f), 1e-6f);
    }
  }
}

// exp runs in vector registers by a polynomial (not libm lane by lane): it
// must stay within a few ulp of std::exp over the whole float range, flush
// to 0 / +inf at the ends, and keep NaN, in scalar and vector code alike.
TEST(CodegenLLVM, ExpIsAccurateOverTheWholeRangeInScalarAndVectorCode) {
  std::vector<float> xs;
  for (float x = -100.f; x <= 100.f; x += 0.0731f) xs.push_back(x);
  for (float x : {0.f, -0.f, 1e-30f, -87.33f, -87.34f, 88.72f, 88.73f, 88.7f, 87.9f, -0.5f * 0.6931472f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    xs.push_back(x);
  while (xs.size() % 16) xs.push_back(1.f);
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor A = ir::placeholder({n}, "A"), E = ir::placeholder({n}, "E");
  Var i("i");
  for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
    Var o("o");
    Stmt store = tir::make_store(E, {o * 16 + i}, ir::exp(at(A, {o * 16 + i})));
    auto f = kernel({A, E}, loop(o, n / 16, loop(i, 16, store, kind)));
    NDArray a({n}), e({n});
    for (int64_t x = 0; x < n; ++x) a[x] = xs[x];
    run(f, {&a, &e});
    for (int64_t x = 0; x < n; ++x) {
      const float v = xs[x], want = std::exp(v), got = e[x];
      if (std::isnan(v)) ASSERT_TRUE(std::isnan(got));
      else if (v < -87.33654f) ASSERT_EQ(got, 0.f) << v;
      else if (v > 88.72283f) ASSERT_EQ(got, std::numeric_limits<float>::infinity()) << v;
      else ASSERT_NEAR(got, want, 3e-7 * want + 1e-37) << "exp(" << v << ")";
    }
  }
}

// Padding-style reads: the selected-away arm would read A[-1]; it must not be
// evaluated there (masked in vector code). Strided reads and writes gather/scatter.
TEST(CodegenLLVM, VectorisedSelectStridedLoadsAndStoresMatchReference) {
  Tensor A = ir::placeholder({64}, "A"), P = ir::placeholder({32}, "P"), S = ir::placeholder({64}, "S");
  Tensor column_of = ir::placeholder({32, 2}, "A2"), T = ir::placeholder({3, 32}, "T");
  Var i("i");
  Stmt body = tir::make_seq({
      tir::make_store(P, {i}, ir::select(i >= 1, at(A, {i - 1}), 0.0f) + at(A, {i * 2})),
      tir::make_store(S, {i * 2}, 0.0f - at(A, {i})),
      tir::make_store(T, {2, i}, at(column_of, {i, 1})),  // a column of a row-major matrix
  });
  auto f = kernel({A, P, S, column_of, T}, loop(i, 32, body, ForKind::Vectorized));
  NDArray a({64}), p({32}), s({64});
  std::string ir = emit_llvm_ir(f, Target::host());
  EXPECT_NE(ir.find("@llvm.masked.load"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@llvm.masked.gather"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@llvm.masked.scatter"), std::string::npos) << ir;
  a.fill_random(14);
  NDArray a2({32, 2}), t({3, 32});
  a2.fill_random(15);
  run(f, {&a, &p, &s, &a2, &t});
  for (int64_t x = 0; x < 32; ++x) {
    ASSERT_FLOAT_EQ(t[2 * 32 + x], a2[x * 2 + 1]);
    ASSERT_FLOAT_EQ(p[x], (x >= 1 ? a[x - 1] : 0.0f) + a[2 * x]);
    ASSERT_FLOAT_EQ(s[2 * x], -a[x]);
    ASSERT_EQ(s[2 * x + 1], 0.0f);
  }
}

// A loop whose lanes depend on each other (a running sum) stays serial.
TEST(CodegenLLVM, VectorisedLoopWithCrossLaneDependenceRunsSerially) {
  Tensor A = ir::placeholder({16}, "A");
  Var i("i");
  auto f = kernel({A}, loop(i, 15, tir::make_store(A, {i + 1}, at(A, {i + 1}) + at(A, {i})), ForKind::Vectorized));
  NDArray a({16});
  for (int64_t x = 0; x < 16; ++x) a[x] = 1.0f;
  run(f, {&a});
  for (int64_t x = 0; x < 16; ++x) ASSERT_FLOAT_EQ(a[x], static_cast<float>(x + 1));
}

TEST(CodegenLLVM, LargeAllocateLivesOnTheHeap) {
  constexpr int64_t n = 100000;  // 400 KB, beyond the stack limit
  Tensor A = ir::placeholder({n}, "A"), C = ir::placeholder({n}, "C"), T = ir::placeholder({n}, "T");
  Var i("i"), j("j");
  Stmt body = tir::make_allocate(T, tir::make_seq({
                                        loop(i, n, tir::make_store(T, {i}, at(A, {i}) * 2.0f)),
                                        loop(j, n, tir::make_store(C, {j}, at(T, {n - 1 - j}) + 1.0f)),
                                    }));
  auto f = kernel({A, C}, body);
  EXPECT_NE(emit_llvm_ir(f, Target::host()).find("@malloc"), std::string::npos);
  NDArray a({n}), c({n});
  a.fill_random(15);
  run(f, {&a, &c});
  for (int64_t x = 0; x < n; ++x) ASSERT_FLOAT_EQ(c[x], a[n - 1 - x] * 2.0f + 1.0f);
}

TEST(CodegenLLVM, UnrolledLoopLeavesNoLoopBehind) {
  Tensor A = ir::placeholder({8}, "A");
  Var i("i");
  auto f = kernel({A}, loop(i, 8, tir::make_store(A, {i}, at(A, {i}) + ir::cast(ir::DType::Float32, i)), ForKind::Unrolled));
  std::string ir = emit_llvm_ir(f, Target::host());
  EXPECT_EQ(ir.find(" = phi "), std::string::npos) << ir;  // the instruction: "sapphirerapids" holds "phi" too
  NDArray a({8});
  run(f, {&a});
  for (int64_t x = 0; x < 8; ++x) ASSERT_FLOAT_EQ(a[x], static_cast<float>(x));
}

// Builders compile candidates on several threads at once.
TEST(CodegenLLVM, ConcurrentCompilationsAgree) {
  auto f = register_blocked_matmul(16, 32, 8, ForKind::Parallel);
  std::string expected = emit_llvm_ir(f, Target::host());
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back([&] { result = emit_llvm_ir(f, Target::host()); });
  for (auto& t : threads) t.join();
  for (const auto& result : results) EXPECT_EQ(result, expected);
}

TEST(CodegenLLVM, ReductionNodeIsRejected) {
  Tensor A = ir::placeholder({4}, "A"), C = ir::placeholder({1}, "C");
  ir::IterVar r = ir::reduce_axis(4, "r");
  auto f = kernel({A, C}, tir::make_store(C, {0}, ir::sum(at(A, {r.var}), {r})));
  EXPECT_THROW(compile_to_object(f, Target::host()), Error);
}

TEST(CodegenLLVM, AccessStrideFollowsRowMajorLayout) {
  Var i("i"), j("j"), n("n");
  EXPECT_EQ(access_stride({i, j}, {4, 16}, j.node()), 1);
  EXPECT_EQ(access_stride({j, i}, {4, 16}, j.node()), 16);
  EXPECT_EQ(access_stride({i * 2 + 1, Expr(3)}, {4, 16}, j.node()), 0);
  EXPECT_EQ(access_stride({i, j * 3 - j}, {4, 16}, j.node()), 2);
  EXPECT_FALSE(access_stride({i, j * n}, {4, 16}, j.node()).has_value());
  EXPECT_FALSE(access_stride({i, ir::floordiv(j, 2)}, {4, 16}, j.node()).has_value());
}

}  // namespace
}  // namespace tessera::codegen
