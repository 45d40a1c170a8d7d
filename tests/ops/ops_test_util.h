#pragma once
// Test helpers for the ops layer: deterministic random data, error metrics, and
// a direct interpreter of a ComputeDAG (every element of every stage evaluated
// from its expression) so declarations can be checked against references
// without the lowering and code generation layers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include "ir/compute_dag.h"
#include "ops/common.h"

namespace tessera::ops::test {

// Uniform in [-1, 1), reproducible from `seed`.
inline std::vector<float> random_data(int64_t size, uint32_t seed = 1) {
  std::vector<float> v(size);
  uint64_t state = seed * 2654435761u + 12345;
  for (auto& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = float((state >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
  }
  return v;
}

// max_i |a_i - b_i| / max(max_i |b_i|, 1e-6): relative to the output's scale,
// so outputs near zero do not blow the ratio up.
inline double max_relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 1e-6;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / scale;
}

// Evaluates a DAG element by element. Loads are bounds-checked, so a
// declaration that indexes outside a tensor fails loudly instead of reading junk.
class DagInterpreter {
 public:
  // inputs in dag.placeholders() order; returns the first output.
  std::vector<float> run(const ir::ComputeDAG& dag, const std::vector<const float*>& inputs) {
    auto placeholders = dag.placeholders();
    if (placeholders.size() != inputs.size()) throw std::runtime_error("wrong number of inputs");
    for (size_t i = 0; i < inputs.size(); ++i)
      values_[placeholders[i].get()].assign(inputs[i], inputs[i] + placeholders[i]->num_elements());
    for (const auto& t : dag.tensors())
      if (!t->is_placeholder()) compute(t);
    return values_.at(dag.outputs()[0].get());
  }

 private:
  void compute(const ir::Tensor& t) {
    std::vector<float>& out = values_[t.get()];
    out.assign(t->num_elements(), 0.0f);
    for_each_index(t->axes, [&](int64_t flat) { out[flat] = float(eval(t->body)); });
  }

  // Visits every point of the iteration space of `axes`, binding their variables.
  template <class F>
  void for_each_index(const std::vector<ir::IterVar>& axes, F&& f) {
    int64_t total = 1;
    for (const auto& a : axes) total *= a.extent;
    for (int64_t flat = 0; flat < total; ++flat) {
      int64_t rest = flat;
      for (size_t d = axes.size(); d-- > 0;) {
        env_[axes[d].var.get()] = rest % axes[d].extent;
        rest /= axes[d].extent;
      }
      f(flat);
    }
  }

  double eval(const ir::Expr& e) {
    using K = ir::ExprKind;
    switch (e.kind()) {
      case K::IntImm: return double(e.as<ir::IntImmNode>()->value);
      case K::FloatImm: return float(e.as<ir::FloatImmNode>()->value);
      case K::Var: return double(env_.at(e.get()));
      case K::Not: return eval(e.as<ir::NotNode>()->a) == 0;
      case K::Select: {
        auto* s = e.as<ir::SelectNode>();
        return eval(s->cond) != 0 ? eval(s->true_value) : eval(s->false_value);
      }
      case K::Cast: {
        double v = eval(e.as<ir::CastNode>()->value);
        if (e.dtype() == ir::DType::Float32) return float(v);
        if (e.dtype() == ir::DType::Bool) return v != 0;
        return double(int64_t(v));
      }
      case K::Call: {
        auto* c = e.as<ir::CallNode>();
        float x = float(eval(c->args.at(0)));
        if (c->name == "exp") return std::exp(x);
        if (c->name == "log") return std::log(x);
        if (c->name == "sqrt") return std::sqrt(x);
        if (c->name == "tanh") return std::tanh(x);
        if (c->name == "fabs") return std::fabs(x);
        if (c->name == "sigmoid") return 1.0f / (1.0f + std::exp(-x));
        if (c->name == "round") return std::nearbyint(x);  // halves to even
        throw std::runtime_error("unknown call " + c->name);
      }
      case K::TensorLoad: return load(e.as<ir::TensorLoadNode>());
      case K::Reduce: {
        auto* r = e.as<ir::ReduceNode>();
        double acc = eval(ir::reduce_identity(r->combiner, e.dtype()));
        const bool integer = ir::is_integer(e.dtype());  // exact sums (int32 accumulators)
        for_each_index(r->axes, [&](int64_t) {
          const double v = integer ? eval(r->source) : float(eval(r->source));
          if (r->combiner == ir::ReduceKind::Sum) acc = integer ? acc + v : float(acc + v);
          else if (r->combiner == ir::ReduceKind::Max) acc = std::max<double>(acc, v);
          else acc = std::min<double>(acc, v);
        });
        return acc;
      }
      default: break;
    }
    auto* b = e.as<ir::BinaryNode>();
    if (!b) throw std::runtime_error("unexpected expression kind " + ir::kind_name(e.kind()));
    double x = eval(b->a), y = eval(b->b);
    if (ir::is_integer(b->a.dtype())) return int_binary(e.kind(), int64_t(x), int64_t(y));
    float fx = float(x), fy = float(y);
    switch (e.kind()) {
      case K::Add: return fx + fy;
      case K::Sub: return fx - fy;
      case K::Mul: return fx * fy;
      case K::Div: return fx / fy;
      case K::Min: return std::min(fx, fy);
      case K::Max: return std::max(fx, fy);
      case K::EQ: return fx == fy;
      case K::NE: return fx != fy;
      case K::LT: return fx < fy;
      case K::LE: return fx <= fy;
      case K::GT: return fx > fy;
      case K::GE: return fx >= fy;
      case K::And: return fx != 0 && fy != 0;
      case K::Or: return fx != 0 || fy != 0;
      default: throw std::runtime_error("unexpected float op " + ir::kind_name(e.kind()));
    }
  }

  static double int_binary(ir::ExprKind k, int64_t x, int64_t y) {
    using K = ir::ExprKind;
    auto floordiv = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
    switch (k) {
      case K::Add: return double(x + y);
      case K::Sub: return double(x - y);
      case K::Mul: return double(x * y);
      case K::Div: return double(x / y);
      case K::Mod: return double(x % y);
      case K::FloorDiv: return double(floordiv(x, y));
      case K::FloorMod: return double(x - floordiv(x, y) * y);
      case K::Min: return double(std::min(x, y));
      case K::Max: return double(std::max(x, y));
      case K::EQ: return x == y;
      case K::NE: return x != y;
      case K::LT: return x < y;
      case K::LE: return x <= y;
      case K::GT: return x > y;
      case K::GE: return x >= y;
      case K::And: return x && y;
      case K::Or: return x || y;
      default: throw std::runtime_error("unexpected int op " + ir::kind_name(k));
    }
  }

  double load(const ir::TensorLoadNode* l) {
    const auto& shape = l->tensor->shape;
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t i = int64_t(eval(l->indices[d]));
      if (i < 0 || i >= shape[d])
        throw std::runtime_error("out-of-bounds load " + l->tensor->name + " dim " + std::to_string(d) +
                                 " index " + std::to_string(i));
      flat = flat * shape[d] + i;
    }
    return values_.at(l->tensor.get()).at(flat);
  }

  std::map<const ir::TensorNode*, std::vector<float>> values_;
  std::map<const ir::ExprNode*, int64_t> env_;
};

// Random inputs for every placeholder of w (seeded by position).
inline std::vector<std::vector<float>> random_inputs(const Workload& w) {
  std::vector<std::vector<float>> data;
  uint32_t seed = 7;
  for (const auto& p : w.dag.placeholders()) data.push_back(random_data(p->num_elements(), seed++));
  return data;
}

inline std::vector<const float*> pointers(const std::vector<std::vector<float>>& data) {
  std::vector<const float*> p;
  for (const auto& d : data) p.push_back(d.data());
  return p;
}

}  // namespace tessera::ops::test
