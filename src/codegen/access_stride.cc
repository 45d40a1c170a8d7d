#include "codegen/access_stride.h"

#include "ir/functor.h"
#include "tir/arith.h"

namespace tessera::codegen {

std::optional<int64_t> stride_along(const ir::Expr& e, const ir::VarNode* var) {
  int64_t stride = 0;
  for (const auto& [atom, coefficient] : tir::linear_form(e).terms) {
    if (atom.get() == var) {
      stride += coefficient;
      continue;
    }
    // var inside a non-linear atom (a product with another variable, a division...).
    bool depends = false;
    ir::post_order_visit(atom, [&](const ir::Expr& x) { depends = depends || x.get() == var; });
    if (depends) return std::nullopt;
  }
  return stride;
}

std::optional<int64_t> access_stride(const std::vector<ir::Expr>& indices, const std::vector<int64_t>& shape,
                                     const ir::VarNode* var) {
  int64_t total = 0, extent_product = 1;
  for (size_t d = indices.size(); d-- > 0;) {
    auto stride = stride_along(indices[d], var);
    if (!stride) return std::nullopt;
    total += *stride * extent_product;
    extent_product *= d < shape.size() ? shape[d] : 1;
  }
  return total;
}

}  // namespace tessera::codegen
