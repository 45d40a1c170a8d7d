// Stage names: the first free of base, base_1, ... upstream of the inputs
// (they are part of workload keys, so they must not change), found in time
// linear in a chain's length (a full walk per call made Relu x20000 take
// minutes).
#include <gtest/gtest.h>

#include "ir/tensor.h"
#include "ops/common.h"
#include "ops/elementwise.h"

namespace tessera::ops {
namespace {

TEST(UniqueName, AChainCountsUpAndSiblingsReuseTheirParentsFreeName) {
  const ir::Tensor x = ir::placeholder({4, 4}, "data");
  ir::Tensor y = x;
  for (int i = 0; i < 4; ++i) y = relu(y);
  EXPECT_EQ(y->name, "T_relu_3");
  // Two branches of x: neither sees the other, so both are T_relu; what
  // reads both sees both.
  const ir::Tensor a = relu(x), b = relu(x);
  EXPECT_EQ(a->name, "T_relu");
  EXPECT_EQ(b->name, "T_relu");
  EXPECT_EQ(relu(add(a, b))->name, "T_relu_1");
  // After another graph, a chain started from a new placeholder starts over.
  const ir::Tensor other = ir::placeholder({2}, "data");
  EXPECT_EQ(relu(other)->name, "T_relu");
  EXPECT_EQ(relu(relu(y))->name, "T_relu_5");  // y's chain again: it still sees its own
}

TEST(UniqueName, ALongChainIsDeclaredInLinearTime) {
  // Quadratic, 20000 stages walked 20000 times took minutes (past this test's timeout).
  ir::Tensor y = ir::placeholder({8}, "data");
  for (int i = 0; i < 20000; ++i) y = relu(y);
  EXPECT_EQ(y->name, "T_relu_19999");
}

}  // namespace
}  // namespace tessera::ops
