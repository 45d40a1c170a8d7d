#include "codegen/c_printer.h"

#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessera::codegen {
namespace {

using namespace testing;  // NOLINT

TEST(CodegenCPrinter, PrintsEveryLoopWithItsKind) {
  Tensor A = ir::placeholder({56, 64}, "A"), C = ir::placeholder({56, 64}, "C");
  Tensor T = ir::placeholder({4, 16}, "T_local");
  Var i("i"), jo("jo"), u("u"), v("v");
  Expr col = jo * 16 + v;
  Stmt tile = tir::make_allocate(
      T, tir::make_seq({
             loop(u, 4, loop(v, 16, tir::make_store(T, {u, v}, ir::max(at(A, {i, col}), 0.0f)), ForKind::Vectorized),
                  ForKind::Unrolled),
             tir::make_if(i < 50, loop(v, 16, tir::make_store(C, {i, col}, at(T, {0, v}) * 2.0f))),
         }));
  auto f = kernel({A, C}, loop(i, 56, loop(jo, 4, tile), ForKind::Parallel), "relu_kernel");
  std::string c = to_c(f);
  EXPECT_NE(c.find("void relu_kernel(float* restrict A, float* restrict C) {"), std::string::npos) << c;
  EXPECT_NE(c.find("for (int64_t i = 0; i < 56; ++i) {  // parallel"), std::string::npos) << c;
  EXPECT_NE(c.find("for (int64_t jo = 0; jo < 4; ++jo) {\n"), std::string::npos) << c;
  EXPECT_NE(c.find("for (int64_t u = 0; u < 4; ++u) {  // unrolled"), std::string::npos) << c;
  EXPECT_NE(c.find("for (int64_t v = 0; v < 16; ++v) {  // vectorized"), std::string::npos) << c;
  EXPECT_NE(c.find("float T_local[64];  // [4, 16]"), std::string::npos) << c;
  EXPECT_NE(c.find("T_local[u*16 + v] = max(A[i*64 + jo*16 + v], 0.0f);"), std::string::npos) << c;
  EXPECT_NE(c.find("if (i < 50) {"), std::string::npos) << c;
  EXPECT_NE(c.find("C[i*64 + jo*16 + v] = T_local[v]*2.0f;"), std::string::npos) << c;
}

}  // namespace
}  // namespace tessera::codegen
