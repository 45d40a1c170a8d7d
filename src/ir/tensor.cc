#include "ir/tensor.h"

#include <cstdint>
#include <set>

#include "ir/functor.h"
#include "support/checked_math.h"
#include "tessera/error.h"

namespace tessera::ir {

std::string to_string(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "+=";
    case ReduceKind::Max: return "max=";
    case ReduceKind::Min: return "min=";
  }
  return "?";
}

IterVar reduce_axis(int64_t extent, const std::string& name) {
  if (extent <= 0) throw Error("reduce axis '" + name + "' has non-positive extent " + std::to_string(extent));
  return IterVar{Var(name), extent, IterKind::Reduce};
}

int64_t TensorNode::num_elements() const { return support::bounded_product(shape, [&] { return "tensor '" + name + "'"; }); }

std::vector<Tensor> TensorNode::inputs() const {
  std::vector<Tensor> out;
  std::set<const TensorNode*> seen;
  if (!body) return out;
  post_order_visit(body, [&](const Expr& e) {
    if (auto* l = e.as<TensorLoadNode>()) {
      if (seen.insert(l->tensor.get()).second) out.push_back(l->tensor);
    }
  });
  return out;
}

Tensor placeholder(std::vector<int64_t> shape, const std::string& name, DType dtype) {
  for (int64_t d : shape)
    if (d <= 0) throw Error("placeholder '" + name + "' has non-positive dimension " + std::to_string(d));
  auto t = std::make_shared<TensorNode>();
  t->name = name;
  t->shape = std::move(shape);
  t->dtype = dtype;
  t->op = OpKind::Placeholder;
  return t;
}

Tensor compute(std::vector<int64_t> shape, const ComputeFn& fn, const std::string& name,
               const std::string& tag, std::vector<std::string> axis_names,
               std::map<std::string, std::string> attrs) {
  auto t = std::make_shared<TensorNode>();
  t->name = name;
  t->shape = shape;
  t->op = OpKind::Compute;
  t->tag = tag;
  t->attrs = std::move(attrs);
  std::vector<Var> vars;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] <= 0)
      throw Error("compute '" + name + "' has non-positive dimension " + std::to_string(shape[i]));
    std::string n = i < axis_names.size() ? axis_names[i] : "i" + std::to_string(i);
    vars.emplace_back(n);
    t->axes.push_back(IterVar{vars.back(), shape[i], IterKind::Spatial});
  }
  t->body = fn(vars);
  if (!t->body) throw Error("compute '" + name + "' returned an undefined expression");
  t->dtype = t->body.dtype();
  if (auto* r = t->body.as<ReduceNode>()) t->reduce_axes = r->axes;
  return t;
}

namespace {

// `e` as a load of a `storage` tensor, through casts to wider integers.
const TensorLoadNode* load_of(Expr e, DType storage) {
  while (e.kind() == ExprKind::Cast && is_integer(e.dtype())) e = e.as<CastNode>()->value;
  const auto* load = e.as<TensorLoadNode>();
  return load && load->tensor->dtype == storage ? load : nullptr;
}

// `e` as an integer literal (through casts), or nullopt.
std::optional<int64_t> integer_literal(Expr e) {
  while (e.kind() == ExprKind::Cast && is_integer(e.dtype())) e = e.as<CastNode>()->value;
  const auto* literal = e.as<IntImmNode>();
  return literal ? std::optional<int64_t>(literal->value) : std::nullopt;
}

// The load `a` - `literal` is of (a a load of `storage`), or nullptr.
const TensorLoadNode* load_less(const Expr& e, DType storage, int64_t literal) {
  const auto* sub = e.as<BinaryNode>();
  if (!sub || e.kind() != ExprKind::Sub || integer_literal(sub->b) != literal) return nullptr;
  return load_of(sub->a, storage);
}

// The load `e` = max(load, `floor`) clamps (in either order), or nullptr.
const TensorLoadNode* load_at_least(const Expr& e, DType storage, int64_t floor) {
  const auto* clamp = e.as<BinaryNode>();
  if (!clamp || e.kind() != ExprKind::Max) return nullptr;
  if (integer_literal(clamp->b) == floor) return load_of(clamp->a, storage);
  return integer_literal(clamp->a) == floor ? load_of(clamp->b, storage) : nullptr;
}

}  // namespace

std::optional<BytesProduct> unsigned_times_signed(const Expr& product) {
  const auto* mul = product.as<BinaryNode>();
  if (!mul || product.kind() != ExprKind::Mul) return std::nullopt;
  for (const auto& [u, s] : {std::pair{mul->a, mul->b}, std::pair{mul->b, mul->a}}) {
    const BytesProduct p{load_of(u, DType::UInt8), load_of(s, DType::Int8)};
    if (p.unsigned_bytes && p.signed_bytes) return p;
    const BytesProduct centered{load_less(u, DType::UInt8, 128), load_at_least(s, DType::Int8, -127), true};
    if (centered.unsigned_bytes && centered.signed_bytes) return centered;
  }
  return std::nullopt;
}

Expr centered_bytes_product(Expr u, Expr s) {
  return (std::move(u) - Expr(int64_t{128})) * max(std::move(s), Expr(int64_t{-127}));
}

Expr load(const Tensor& t, std::vector<Expr> indices) {
  if (indices.size() != t->shape.size())
    throw Error("tensor '" + t->name + "' has " + std::to_string(t->shape.size()) +
                " dimensions but is indexed with " + std::to_string(indices.size()));
  for (auto& i : indices)
    if (i.dtype() != DType::Int64) i = cast(DType::Int64, i);
  return Expr(std::make_shared<const TensorLoadNode>(t, std::move(indices)));
}

Expr reduce(ReduceKind k, Expr source, std::vector<IterVar> axes) {
  for (auto& a : axes) a.kind = IterKind::Reduce;
  return Expr(std::make_shared<const ReduceNode>(k, std::move(source), std::move(axes)));
}

Expr sum(Expr source, std::vector<IterVar> axes) { return reduce(ReduceKind::Sum, std::move(source), std::move(axes)); }
Expr reduce_max(Expr source, std::vector<IterVar> axes) { return reduce(ReduceKind::Max, std::move(source), std::move(axes)); }
Expr reduce_min(Expr source, std::vector<IterVar> axes) { return reduce(ReduceKind::Min, std::move(source), std::move(axes)); }

Expr reduce_identity(ReduceKind k, DType t) {
  if (is_integer(compute_type(t))) {
    const DType c = compute_type(t);
    const int64_t lowest = c == DType::Int32 ? INT32_MIN : INT64_MIN, highest = c == DType::Int32 ? INT32_MAX : INT64_MAX;
    switch (k) {
      case ReduceKind::Sum: return cast(c, make_int(0));
      case ReduceKind::Max: return cast(c, make_int(lowest));
      case ReduceKind::Min: return cast(c, make_int(highest));
    }
  }
  switch (k) {
    case ReduceKind::Sum: return make_float(0.0);
    case ReduceKind::Max: return make_float(-3.4028234663852886e38);
    case ReduceKind::Min: return make_float(3.4028234663852886e38);
  }
  return Expr();
}

Expr reduce_combine(ReduceKind k, Expr acc, Expr value) {
  switch (k) {
    case ReduceKind::Sum: return acc + value;
    case ReduceKind::Max: return max(acc, value);
    case ReduceKind::Min: return min(acc, value);
  }
  return Expr();
}

}  // namespace tessera::ir
