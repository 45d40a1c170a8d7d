#include "codegen/lane_analysis.h"

#include <algorithm>
#include <unordered_map>

#include "ir/functor.h"
#include "tir/arith.h"
#include "tir/simplify.h"
#include "tir/stmt_functor.h"

namespace tessera::codegen {
namespace {

bool depends_on(const ir::Expr& e, const ir::VarNode* var) {
  bool found = false;
  ir::post_order_visit(e, [&](const ir::Expr& x) { found = found || x.get() == var; });
  return found;
}

bool same_indices(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!ir::structural_equal(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<int64_t> stride_along(const ir::Expr& e, const ir::VarNode* var) {
  int64_t stride = 0;
  for (const auto& [atom, coefficient] : tir::linear_form(e).terms) {
    if (atom.get() == var) {
      stride += coefficient;
    } else if (depends_on(atom, var)) {
      return std::nullopt;  // var inside a product with another variable, a division...
    }
  }
  return stride;
}

namespace {

// The stride of the row-major offset of `indices` into `shape`, from each
// index's own stride (`stride_of`, nullopt when it has none).
template <class StrideOf>
std::optional<int64_t> row_major_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                        const StrideOf& stride_of) {
  int64_t total = 0, extent_product = 1;
  for (size_t d = indices.size(); d-- > 0;) {
    const std::optional<int64_t> stride = stride_of(indices[d]);
    if (!stride) return std::nullopt;
    total += *stride * extent_product;
    extent_product *= d < shape.size() ? shape[d] : 1;
  }
  return total;
}

}  // namespace

std::optional<int64_t> access_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                     const ir::VarNode* var) {
  return row_major_stride(indices, shape, [&](const ir::Expr& e) { return stride_along(e, var); });
}

ir::Expr at_first_lane(const ir::Expr& e, const ir::Var& var) {
  return tir::simplify(ir::substitute(e, ir::VarMap{{var, ir::Expr(int64_t{0})}}));
}

std::optional<int64_t> lane_stride(const ir::Expr& e, const ir::Var& var, int64_t lanes) {
  int64_t stride = 0;
  for (const auto& [atom, coefficient] : tir::linear_form(e).terms) {
    if (atom.get() == var.node()) {
      stride += coefficient;
      continue;
    }
    if (!depends_on(atom, var.node())) continue;
    const auto* b = atom.as<ir::BinaryNode>();
    int64_t divisor = 0;
    if (!b || (atom.kind() != ir::ExprKind::FloorDiv && atom.kind() != ir::ExprKind::FloorMod)) return std::nullopt;
    // Of an operand the lanes share, the lanes share the quotient and the
    // remainder (a tap's row, (k / C) / KW, of k / C that a step's lanes share).
    if (ir::is_const_int(b->b, &divisor) && divisor > 0 && lane_stride(b->a, var, lanes) == 0) continue;
    if (!ir::is_const_int(b->b, &divisor) || divisor <= 0 || divisor % lanes != 0 || lane_stride(b->a, var, lanes) != 1)
      return std::nullopt;
    if (known_alignment(at_first_lane(b->a, var)) % lanes != 0) return std::nullopt;
    if (atom.kind() == ir::ExprKind::FloorMod) stride += coefficient;
  }
  return stride;
}

std::optional<int64_t> lane_access_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                          const ir::Var& var, int64_t lanes) {
  return row_major_stride(indices, shape, [&](const ir::Expr& e) { return lane_stride(e, var, lanes); });
}

bool lane_uniform(const ir::Expr& cond, const ir::Var& var, int64_t lanes) {
  if (!depends_on(cond, var.node())) return true;
  const auto* b = cond.as<ir::BinaryNode>();
  if (!b) return false;
  if (cond.kind() == ir::ExprKind::And) return lane_uniform(b->a, var, lanes) && lane_uniform(b->b, var, lanes);
  int64_t shift = 0;  // e OP 0 as (e - shift) < 0 or >= 0
  switch (cond.kind()) {
    case ir::ExprKind::LT:
    case ir::ExprKind::GE: break;
    case ir::ExprKind::LE:
    case ir::ExprKind::GT: shift = 1; break;
    default: return false;
  }
  const ir::Expr e = b->a - b->b;
  const std::optional<int64_t> stride = lane_stride(e, var, lanes);
  if (stride == 0) return true;  // the lanes compare the same value
  if (stride != 1) return false;
  return known_alignment(at_first_lane(e - ir::Expr(shift), var)) % lanes == 0;
}

int64_t known_alignment(const ir::Expr& e) {
  constexpr int64_t kMost = 64;
  int64_t c = 0;
  if (ir::is_const_int(e, &c)) {
    if (c == 0) return kMost;
    int64_t p = 1;
    while (p < kMost && c % (2 * p) == 0) p *= 2;
    return p;
  }
  const auto* b = e.as<ir::BinaryNode>();
  switch (e.kind()) {
    case ir::ExprKind::Add:
    case ir::ExprKind::Sub:
    case ir::ExprKind::Min:
    case ir::ExprKind::Max:
    case ir::ExprKind::FloorMod: return std::min(known_alignment(b->a), known_alignment(b->b));
    case ir::ExprKind::Mul: return std::min(kMost, known_alignment(b->a) * known_alignment(b->b));
    default: return 1;
  }
}

int64_t offset_alignment(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape) {
  int64_t alignment = 64;
  int64_t stride = 1;
  for (size_t d = indices.size(); d-- > 0;) {
    alignment = std::min(alignment, known_alignment(ir::Expr(stride) * indices[d]));
    stride *= d < shape.size() ? shape[d] : 1;
  }
  return alignment;
}

bool lanes_are_independent(const tir::ForNode& loop) {
  const ir::VarNode* var = loop.var.node();
  bool ok = true;
  std::unordered_map<const ir::TensorNode*, const tir::StoreNode*> written;
  tir::visit_stmts(loop.body, [&](const tir::Stmt& s) {
    switch (s->kind) {
      case tir::StmtKind::Store: {
        const auto* store = tir::as<tir::StoreNode>(s);
        auto stride = access_stride(store->indices, store->buffer->shape, var);
        if (!stride || *stride == 0) ok = false;
        auto [it, inserted] = written.emplace(store->buffer.get(), store);
        if (!inserted && !same_indices(it->second->indices, store->indices)) ok = false;
        break;
      }
      case tir::StmtKind::Seq:
      case tir::StmtKind::IfThenElse: break;
      default: ok = false;  // a nested loop or allocation
    }
  });
  if (!ok) return false;
  auto check_reads = [&](const ir::Expr& root) {
    ir::post_order_visit(root, [&](const ir::Expr& e) {
      if (e.kind() == ir::ExprKind::Reduce) ok = false;
      const auto* load = e.as<ir::TensorLoadNode>();
      if (load == nullptr) return;
      auto it = written.find(load->tensor.get());
      if (it != written.end() && !same_indices(it->second->indices, load->indices)) ok = false;
    });
  };
  tir::visit_stmts(loop.body, [](const tir::Stmt&) {}, check_reads);
  return ok;
}

}  // namespace tessera::codegen
