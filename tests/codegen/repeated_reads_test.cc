// Which repeated reads of a stored value the GPU printer binds once: those
// evaluated however the value's selects go, the largest first.
#include "codegen/repeated_reads.h"

#include <gtest/gtest.h>

#include "ir/functor.h"
#include "ir/tensor.h"

namespace tessera::codegen {
namespace {

struct Fixture {
  ir::Tensor a = ir::placeholder({64}, "a"), b = ir::placeholder({64}, "b");
  ir::Var i{"i"};
  ir::Expr x = ir::load(a, {i}) + ir::load(b, {i});  // a fused epilogue's operand: product tile + bias
  ir::Expr zero = ir::make_float(0.0), six = ir::make_float(6.0);
};

int reads_in(const ir::Expr& e) {
  int n = 0;
  ir::post_order_visit(e, [&](const ir::Expr& s) { n += s.kind() == ir::ExprKind::TensorLoad; });
  return n;
}

TEST(RepeatedReads, ReluAndClipReadTheirOperandOnce) {
  Fixture f;
  const ir::Expr relu = ir::select(f.x < f.zero, f.zero, f.x);
  BoundReads r = bind_repeated_reads(relu, "v");
  ASSERT_EQ(r.bindings.size(), 1u);
  EXPECT_EQ(r.bindings[0].first.name(), "v0");
  EXPECT_EQ(r.bindings[0].first.dtype(), ir::DType::Float32);
  EXPECT_TRUE(ir::structural_equal(r.bindings[0].second, f.x));
  EXPECT_TRUE(ir::structural_equal(r.value, ir::select(r.bindings[0].first < f.zero, f.zero, r.bindings[0].first)));

  // relu6 as clip writes it: two nested selects, x three times, one binding.
  const ir::Expr clip = ir::select(f.x < f.zero, f.zero, ir::select(f.x > f.six, f.six, f.x));
  r = bind_repeated_reads(clip, "v");
  ASSERT_EQ(r.bindings.size(), 1u);
  EXPECT_TRUE(ir::structural_equal(r.bindings[0].second, f.x));
  EXPECT_EQ(reads_in(r.value), 0);
  EXPECT_EQ(reads_in(clip), 6);

  // hard-swish: x * relu6(x + 3) / 6, the repeat below arithmetic and calls.
  const ir::Expr hard_swish =
      f.x * ir::min(ir::max(f.x + ir::make_float(3.0), f.zero), f.six) * ir::make_float(1 / 6.0);
  r = bind_repeated_reads(hard_swish, "v");
  ASSERT_EQ(r.bindings.size(), 1u);
  EXPECT_TRUE(ir::structural_equal(r.bindings[0].second, f.x));
  EXPECT_EQ(reads_in(r.value), 0);
}

// Two repeated operands side by side (relu(x) + relu6(y)): two bindings,
// the larger bound first and evaluated last. maximum's NaN checks repeat y
// only where x is a number: x is bound, y stays where it is chosen.
TEST(RepeatedReads, SeveralOperandsAreBoundLargestFirst) {
  Fixture f;
  const ir::Expr y = ir::load(f.b, {f.i + ir::Expr(int64_t{1})});
  const ir::Expr both =
      ir::select(f.x < f.zero, f.zero, f.x) + ir::select(y < f.zero, f.zero, ir::select(y > f.six, f.six, y));
  BoundReads r = bind_repeated_reads(both, "v");
  ASSERT_EQ(r.bindings.size(), 2u);
  EXPECT_TRUE(ir::structural_equal(r.bindings[1].second, f.x));  // bound first: 5 nodes to y's 4
  EXPECT_EQ(r.bindings[1].first.name(), "v0");
  EXPECT_TRUE(ir::structural_equal(r.bindings[0].second, y));
  EXPECT_EQ(reads_in(r.value), 0);

  const ir::Expr maximum = ir::select(f.x != f.x, f.x, ir::select(y != y, y, ir::max(f.x, y)));
  r = bind_repeated_reads(maximum, "v");
  ASSERT_EQ(r.bindings.size(), 1u);
  EXPECT_TRUE(ir::structural_equal(r.bindings[0].second, f.x));
  EXPECT_EQ(reads_in(r.value), 4);  // y's, under the first choice

  // x repeats inside the larger repeat (x * c) and beside it: (x * c) is
  // bound first, then x, in the value and in that binding; x is evaluated
  // first.
  const ir::Tensor c = ir::placeholder({64}, "c");
  const ir::Expr scaled = f.x * ir::load(c, {f.i});
  const ir::Expr nested = ir::select(scaled < f.zero, f.zero, scaled) + f.x;
  r = bind_repeated_reads(nested, "v");
  ASSERT_EQ(r.bindings.size(), 2u);
  const ir::Var& x_var = r.bindings[0].first;
  EXPECT_EQ(x_var.name(), "v1");
  EXPECT_TRUE(ir::structural_equal(r.bindings[0].second, f.x));
  EXPECT_EQ(r.bindings[1].first.name(), "v0");
  EXPECT_TRUE(ir::structural_equal(r.bindings[1].second, x_var * ir::load(c, {f.i})));
  EXPECT_TRUE(ir::structural_equal(
      r.value, ir::select(r.bindings[1].first < f.zero, f.zero, r.bindings[1].first) + x_var));
}

// A read that occurs only where a select chooses it (a padded window's
// element: its index is out of bounds where the condition fails), or only
// right of && and ||, is not moved before the choice; nothing repeated,
// nothing bound.
TEST(RepeatedReads, ReadsOnlyUnderAChoiceStayWhereTheyAre) {
  Fixture f;
  const ir::Expr inside = f.i < ir::Expr(int64_t{63});
  const ir::Expr next = ir::load(f.a, {f.i + ir::Expr(int64_t{1})});
  const ir::Expr padded = ir::select(inside, next * next, f.zero);
  BoundReads r = bind_repeated_reads(padded, "v");
  EXPECT_TRUE(r.bindings.empty());
  EXPECT_TRUE(r.value.same_as(padded));

  const ir::Expr guarded = ir::select(inside && next > f.zero, f.zero, ir::make_float(1.0)) +
                           ir::select(inside && next > f.zero, ir::make_float(2.0), f.zero);
  EXPECT_TRUE(bind_repeated_reads(guarded, "v").bindings.empty());

  // Once read unconditionally (the condition), also under the choice: bound.
  const ir::Expr checked = ir::select(next > f.zero, next, f.zero);
  EXPECT_EQ(bind_repeated_reads(checked, "v").bindings.size(), 1u);

  // Repeated arithmetic on indices alone, and a value without a repeat.
  const ir::Expr twice = ir::cast(ir::DType::Float32, f.i * f.i) + ir::cast(ir::DType::Float32, f.i * f.i);
  EXPECT_TRUE(bind_repeated_reads(twice, "v").bindings.empty());
  const ir::Expr once = f.x * f.six;
  r = bind_repeated_reads(once, "v");
  EXPECT_TRUE(r.bindings.empty());
  EXPECT_TRUE(r.value.same_as(once));
}

}  // namespace
}  // namespace tessera::codegen
