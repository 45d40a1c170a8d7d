// recognize_gelu (passes.h): GELU as exporters spell it before ONNX's Gelu
// (opset 20): torch.onnx writes F.gelu as Div(x, sqrt 2), Erf, Add 1, Mul x,
// Mul 0.5, which the importer makes multiply, erf, add, multiply, multiply;
// GPT-2's tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the
// same around a tanh (x^3 imported as x * x * x). Read several times, x
// cannot fuse with the matrix product that computes it; as one gelu node it
// is that product's epilogue.
#include <cmath>
#include <optional>

#include "graph/passes.h"
#include "graph/pattern.h"
#include "graph/rewriter.h"
#include "ops/unary_math.h"

namespace tessera::graph {
namespace {

class GeluMatcher {
 public:
  explicit GeluMatcher(const Graph& g) : g_(g) {}

  // gelu(x) when `y` computes it by the erf or the tanh formula: (x * e) * 0.5
  // or (x * 0.5) * e, e = 1 + erf(x * (1 / sqrt 2)) or 1 + tanh(sqrt(2/pi) *
  // (x + 0.044715 x^3)), operands in any order.
  struct Match {
    NodeId x;
    bool tanh;
  };
  std::optional<Match> input_of(const Node& y) const {
    if (y.op != Op::kMultiply) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      const NodeId p = y.inputs[i], q = y.inputs[1 - i];
      if (is_scalar(q, 0.5) && g_.node(p).op == Op::kMultiply)
        for (int j = 0; j < 2; ++j) {
          const NodeId x = g_.node(p).inputs[j];
          if (auto tanh = one_plus_gelu_term_of(g_.node(p).inputs[1 - j], x); tanh && same_shape(y, x))
            return Match{x, *tanh};
        }
      if (auto x = times_scalar(p, 0.5))
        if (auto tanh = one_plus_gelu_term_of(q, *x); tanh && same_shape(y, *x)) return Match{*x, *tanh};
    }
    return std::nullopt;
  }

 private:
  bool is_scalar(NodeId id, double want) const { return pattern::is_scalar(g_, id, want); }
  std::optional<NodeId> times_scalar(NodeId id, double want) const { return pattern::times_scalar(g_, id, want); }
  // Whether `id` is 1 + erf(x / sqrt 2) (false) or 1 + tanh(sqrt(2/pi) (x +
  // 0.044715 x^3)) (true); nullopt when neither.
  std::optional<bool> one_plus_gelu_term_of(NodeId id, NodeId x) const {
    const Node& n = g_.node(id);
    if (n.op != Op::kAdd) return std::nullopt;
    for (int i = 0; i < 2; ++i) {
      const Node& e = g_.node(n.inputs[i]);
      if (!is_scalar(n.inputs[1 - i], 1.0)) continue;
      if (e.op == Op::named("erf") && times_scalar(e.inputs[0], M_SQRT1_2) == x) return false;
      if (e.op == Op::named("tanh"))
        if (auto inner = times_scalar(e.inputs[0], std::sqrt(2.0 / M_PI)); inner && is_x_plus_cubic_of(*inner, x))
          return true;
    }
    return std::nullopt;
  }
  // x + 0.044715 * x^3, x^3 as x * x * x in any grouping.
  bool is_x_plus_cubic_of(NodeId id, NodeId x) const {
    const Node& n = g_.node(id);
    if (n.op != Op::kAdd) return false;
    for (int i = 0; i < 2; ++i)
      if (n.inputs[i] == x)
        if (auto cube = times_scalar(n.inputs[1 - i], 0.044715); cube && is_cube_of(*cube, x)) return true;
    return false;
  }
  bool is_cube_of(NodeId id, NodeId x) const {
    const Node& n = g_.node(id);
    if (n.op != Op::kMultiply) return false;
    for (int i = 0; i < 2; ++i) {
      const Node& square = g_.node(n.inputs[1 - i]);
      if (n.inputs[i] == x && square.op == Op::kMultiply && square.inputs[0] == x && square.inputs[1] == x) return true;
    }
    return false;
  }
  bool same_shape(const Node& y, NodeId x) const { return g_.node(x).type.shape == y.type.shape; }

  const Graph& g_;
};

}  // namespace

Graph recognize_gelu(const Graph& g) {
  const GeluMatcher matcher(g);
  Rewriter r(g);
  for (const Node& n : g.nodes()) {
    if (auto m = matcher.input_of(n)) {
      r.replace(n.id, r.add(Op::named("gelu"), n.name, {r.mapped(m->x)}, ops::GeluAttrs{m->tanh}));
    } else {
      r.copy(n);  // the pattern's inner nodes: dead once nothing else reads them
    }
  }
  return r.finish();
}

}  // namespace tessera::graph
