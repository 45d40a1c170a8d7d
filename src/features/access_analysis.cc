#include "features/access_analysis.h"

#include <algorithm>
#include <cmath>

#include "ir/functor.h"

namespace tessera::features {

float lg(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

std::vector<Access> collect_accesses(const tir::StoreNode* store) {
  std::vector<Access> out;
  out.push_back(Access{.buffer = store->buffer, .indices = store->indices, .written = true});
  ir::post_order_visit(store->value, [&](const ir::Expr& e) {
    auto* load = e.as<ir::TensorLoadNode>();
    if (!load) return;
    for (Access& a : out) {
      if (a.buffer.get() != load->tensor.get()) continue;
      a.read = true;
      return;
    }
    out.push_back(Access{.buffer = load->tensor, .indices = load->indices, .read = true});
  });
  for (Access& a : out)
    for (const auto& idx : a.indices) a.forms.push_back(tir::linear_form(idx));
  return out;
}

AccessStats access_stats(const Access& a, const std::vector<Loop>& loops, size_t d) {
  AccessStats s;
  const ir::Var& var = loops[d].var;
  // Row-major flattening: the stride of the flat index is the sum of the
  // per-dimension coefficients times the dimension's row stride.
  const auto& shape = a.buffer->shape;
  double row_stride = 1;
  for (size_t k = a.indices.size(); k-- > 0;) {
    const auto& form = a.forms[k];
    s.stride += static_cast<double>(form.coefficient_of(var)) * row_stride;
    for (const auto& [atom, coef] : form.terms)
      if (!atom.as<ir::VarNode>() && ir::uses_var(atom, var)) s.nonlinear = true;
    row_stride *= static_cast<double>(k < shape.size() ? shape[k] : 1);
  }
  tir::RangeMap ranges;
  double accesses = 1, dependent = 1;
  for (size_t j = 0; j < loops.size(); ++j) {
    if (j < d) {
      ranges[loops[j].var] = tir::Interval::point(0);
      continue;
    }
    ranges[loops[j].var] = tir::Interval{0, std::max<int64_t>(0, loops[j].extent - 1)};
    accesses *= static_cast<double>(loops[j].extent);
    bool used = false;
    for (const auto& idx : a.indices) used = used || ir::uses_var(idx, loops[j].var);
    if (used) dependent *= static_cast<double>(loops[j].extent);
  }
  double elements = 1;
  for (size_t k = 0; k < a.indices.size(); ++k) {
    double dim = k < shape.size() ? static_cast<double>(shape[k]) : 1;
    tir::Interval b = tir::bound_of(a.indices[k], ranges);
    double span = b.bounded() ? static_cast<double>(b.max - b.min + 1) : dim;
    elements *= std::clamp(span, 1.0, std::max(1.0, dim));
  }
  elements = std::max(1.0, std::min(elements, dependent));
  s.touched_bytes = elements * static_cast<double>(ir::size_in_bytes(a.buffer->dtype));
  s.reuse = accesses / elements;
  return s;
}

}  // namespace tessera::features
