// graph::einsum against sums written out here: a batched product with a
// permuted output, a letter summed in one operand, an implicit output, and
// the forms it refuses with one line naming the equation.
#include "graph/einsum.h"

#include <gtest/gtest.h>

#include "graph/interpreter.h"
#include "graph_test_util.h"

namespace tessera::graph {
namespace {

using test::random_array;
using test::values;

TEST(GraphEinsum, BatchedProductWithAPermutedOutputEqualsTheSum) {
  // y[j, b, i] = sum_k a[b, i, k] * c[b, k, j]
  GraphBuilder b;
  NodeId a = b.input("a", {2, 3, 4}), c = b.input("c", {2, 4, 5});
  Graph g = b.finish({einsum(b, "bik,bkj->jbi", {a, c}, "y")});
  std::vector<runtime::NDArray> in;
  in.push_back(random_array({2, 3, 4}, 1));
  in.push_back(random_array({2, 4, 5}, 2));
  const std::vector<float> av = values(in[0]), cv = values(in[1]);
  const auto out = interpret(g, in);
  ASSERT_EQ(out[0].shape(), (Shape{5, 2, 3}));
  const std::vector<float> got = values(out[0]);
  for (int j = 0; j < 5; ++j)
    for (int bb = 0; bb < 2; ++bb)
      for (int i = 0; i < 3; ++i) {
        double want = 0;
        for (int k = 0; k < 4; ++k) want += av[(bb * 3 + i) * 4 + k] * cv[(bb * 4 + k) * 5 + j];
        EXPECT_NEAR(got[(j * 2 + bb) * 3 + i], want, 1e-5);
      }
}

TEST(GraphEinsum, ALetterOneOperandSumsAndTheImplicitOutput) {
  // "ij,xj->i": x only in the second operand and not in the output, so
  // summed there first; j contracted: y[i] = sum_j a[i, j] * sum_x c[x, j].
  // Implicit ("ij,xj"): the letters used once, alphabetically: y[i, x].
  GraphBuilder b;
  NodeId a = b.input("a", {3, 4}), c = b.input("c", {2, 4});
  Graph g = b.finish({einsum(b, "ij,xj->i", {a, c}, "y"), einsum(b, "ij,xj", {a, c}, "z")});
  std::vector<runtime::NDArray> in;
  in.push_back(random_array({3, 4}, 3));
  in.push_back(random_array({2, 4}, 4));
  const std::vector<float> av = values(in[0]), cv = values(in[1]);
  const auto out = interpret(g, in);
  const std::vector<float> y = values(out[0]), z = values(out[1]);
  ASSERT_EQ(out[0].shape(), (Shape{3}));
  ASSERT_EQ(out[1].shape(), (Shape{3, 2}));
  for (int i = 0; i < 3; ++i) {
    double want = 0;
    for (int j = 0; j < 4; ++j) want += av[i * 4 + j] * (cv[j] + cv[4 + j]);
    EXPECT_NEAR(y[i], want, 1e-5);
    for (int x = 0; x < 2; ++x) {
      double dot = 0;
      for (int j = 0; j < 4; ++j) dot += av[i * 4 + j] * cv[x * 4 + j];
      EXPECT_NEAR(z[i * 2 + x], dot, 1e-5);
    }
  }
}

TEST(GraphEinsum, RefusesDiagonalsBroadcastingAndThreeOperands) {
  GraphBuilder b;
  NodeId a = b.input("a", {3, 3}), c = b.input("c", {4, 3});
  const auto refused = [&](const std::string& equation, std::vector<NodeId> operands) {
    return test::error_of([&] { einsum(b, equation, operands, "e"); });
  };
  EXPECT_NE(refused("ii->i", {a}).find("repeats a letter (a diagonal)"), std::string::npos);
  EXPECT_NE(refused("ij,ij->ij", {a, c}).find("letter 'i' is 3 in one operand and 4 in another"), std::string::npos);
  EXPECT_NE(refused("ij,jk,kl->il", {a, a, a}).find("3 operands"), std::string::npos);
  EXPECT_NE(refused("ij->ik", {a}).find("the output's letter 'k' is in no operand"), std::string::npos);
  EXPECT_NE(refused("i1->i", {a}).find("has the character '1'"), std::string::npos);
  for (const std::string& e : {refused("ii->i", {a}), refused("ij->ik", {a})})
    EXPECT_NE(e.find("einsum 'i"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::graph
