#include <gtest/gtest.h>

#include "ir/compute_dag.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "tessera/error.h"

namespace tessera::ir {
namespace {

TEST(IrExpr, PrintsInSeedFormat) {
  Var yy("yy"), ry("ry");
  Expr e = yy * 2 + ry;
  EXPECT_EQ(to_string(e), "((yy*2) + ry)");
  EXPECT_EQ(to_string(max(Expr(yy), 0.0f)), "max(float32(yy), 0f)");
  EXPECT_EQ(to_string(floordiv(yy, 4)), "floordiv(yy, 4)");
}

TEST(IrExpr, SubstituteReplacesOnlyTheGivenVariable) {
  Var x("x"), y("y");
  Expr e = x * 3 + y;
  VarMap m;
  m[x] = make_int(5);
  EXPECT_EQ(to_string(substitute(e, m)), "((5*3) + y)");
  EXPECT_TRUE(uses_var(e, x));
  EXPECT_FALSE(uses_var(substitute(e, m), x));
}

TEST(IrTensor, ConvPrintsLikeTheSeed) {
  Tensor data = placeholder({1, 16, 16, 8}, "PaddedInput");
  Tensor w = placeholder({3, 3, 8, 4});
  IterVar ry = reduce_axis(3, "ry"), rx = reduce_axis(3, "rx"), rc = reduce_axis(8, "rc");
  Tensor conv = compute(
      {1, 7, 7, 4},
      [&](const std::vector<Var>& v) {
        return sum(load(data, {v[0], v[1] * 2 + ry.var, v[2] * 2 + rx.var, rc.var}) *
                       load(w, {ry.var, rx.var, rc.var, v[3]}),
                   {ry, rx, rc});
      },
      "Conv2dOutput", "conv2d_nhwc", {"nn", "yy", "xx", "ff"});
  EXPECT_EQ(to_string(conv),
            "Conv2dOutput(nn, yy, xx, ff) += (PaddedInput[nn, ((yy*2) + ry), ((xx*2) + rx), rc]*"
            "placeholder[ry, rx, rc, ff])");
  ComputeDAG dag({conv});
  EXPECT_EQ(dag.tensors().size(), 3u);
  EXPECT_EQ(dag.placeholders().size(), 2u);
  EXPECT_DOUBLE_EQ(dag.flop_count(), 2.0 * 7 * 7 * 4 * 3 * 3 * 8);
}

TEST(IrComputeDag, WorkloadKeyIgnoresNamesButNotShapes) {
  auto make = [](const std::string& var_name, int64_t n) {
    Tensor a = placeholder({n, 8}, "A");
    Tensor b = compute({n, 8}, [](const std::vector<Var>& v) { return Expr(v[0]) * 1.0f; }, "B");
    Tensor c = compute(
        {n, 8}, [&](const std::vector<Var>& v) { return load(a, {v[0], v[1]}) + load(b, {v[0], v[1]}); },
        "C", "", {var_name, "j"});
    return ComputeDAG({c});
  };
  EXPECT_EQ(make("i", 4).workload_key(), make("row", 4).workload_key());
  EXPECT_NE(make("i", 4).workload_key(), make("i", 5).workload_key());
  EXPECT_EQ(make("i", 4).workload_key().size(), 32u);
}

TEST(IrTensor, BadShapesAreClearErrors) {
  EXPECT_THROW(placeholder({1, 0}, "x"), Error);
  Tensor a = placeholder({2, 2}, "A");
  EXPECT_THROW(load(a, {Expr(0)}), Error);
  try {
    load(a, {Expr(0)});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessera::ir
