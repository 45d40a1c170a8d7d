#pragma once
// Tensors and the operations that produce them. A tensor is the single output
// of its operation, so one node holds both: a placeholder (an input of the
// task) or a compute op (one expression per output element, optionally a
// reduction). Shapes are static.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace tessera::ir {

enum class IterKind { Spatial, Reduce };

// A loop variable with range [0, extent).
struct IterVar {
  Var var;
  int64_t extent = 0;
  IterKind kind = IterKind::Spatial;
};

IterVar reduce_axis(int64_t extent, const std::string& name);

enum class OpKind { Placeholder, Compute };
enum class ReduceKind { Sum, Max, Min };
std::string to_string(ReduceKind k);

struct TensorNode;
using Tensor = std::shared_ptr<const TensorNode>;

struct TensorNode {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::Float32;
  OpKind op = OpKind::Placeholder;
  // Compute ops only:
  std::vector<IterVar> axes;         // one per output dimension
  std::vector<IterVar> reduce_axes;  // empty unless body is a Reduce
  Expr body;                         // element value; a ReduceNode for reductions
  std::string tag;                   // operator family, e.g. "conv2d_nchwc", "elemwise"
  std::map<std::string, std::string> attrs;

  bool is_placeholder() const { return op == OpKind::Placeholder; }
  bool is_reduction() const { return !reduce_axes.empty(); }
  int64_t num_elements() const;
  std::vector<Tensor> inputs() const;  // tensors read by body, in first-use order
};

// Reading an element of a tensor.
struct TensorLoadNode : ExprNode {
  TensorLoadNode(Tensor t, std::vector<Expr> idx)
      : ExprNode(ExprKind::TensorLoad, compute_type(t->dtype)), tensor(std::move(t)), indices(std::move(idx)) {}
  const Tensor tensor;
  const std::vector<Expr> indices;
};

// A commutative reduction of `source` over `axes`; only at the top of a compute body.
struct ReduceNode : ExprNode {
  ReduceNode(ReduceKind c, Expr s, std::vector<IterVar> a)
      : ExprNode(ExprKind::Reduce, s.dtype()), combiner(c), source(std::move(s)), axes(std::move(a)) {}
  const ReduceKind combiner;
  const Expr source;
  const std::vector<IterVar> axes;
};

Tensor placeholder(std::vector<int64_t> shape, const std::string& name = "placeholder",
                   DType dtype = DType::Float32);

using ComputeFn = std::function<Expr(const std::vector<Var>&)>;
// axis_names: names of the output axes (defaults: i0, i1, ...).
Tensor compute(std::vector<int64_t> shape, const ComputeFn& fn, const std::string& name,
               const std::string& tag = "", std::vector<std::string> axis_names = {},
               std::map<std::string, std::string> attrs = {});

Expr load(const Tensor& t, std::vector<Expr> indices);
// A product of unsigned bytes and signed bytes, each a load (through casts
// to wider integers) of a UInt8 and an Int8 tensor, in either order: the
// operands of x86's byte dot product. Or its centered form,
//
//   (u - 128) * max(s, -127)
//
// a signed byte times a signed byte within +-127: their products' pairs fit
// in 16 bits, which u * s's do not (255 * 127 * 2 > 32767), so a saturating
// byte dot product (pmaddubsw) computes it exactly as |u - 128| times s
// negated where u - 128 is. nullopt when `product` is neither.
struct BytesProduct {
  const TensorLoadNode* unsigned_bytes = nullptr;
  const TensorLoadNode* signed_bytes = nullptr;
  bool centered = false;
};
std::optional<BytesProduct> unsigned_times_signed(const Expr& product);
// The centered form of u * s, for loads of unsigned and signed bytes.
Expr centered_bytes_product(Expr u, Expr s);
Expr reduce(ReduceKind k, Expr source, std::vector<IterVar> axes);
Expr sum(Expr source, std::vector<IterVar> axes);
Expr reduce_max(Expr source, std::vector<IterVar> axes);
Expr reduce_min(Expr source, std::vector<IterVar> axes);
// The value a reduction into a buffer of type `t` starts from (integers: 0,
// the type's lowest or highest).
Expr reduce_identity(ReduceKind k, DType t = DType::Float32);
Expr reduce_combine(ReduceKind k, Expr acc, Expr value);

}  // namespace tessera::ir
