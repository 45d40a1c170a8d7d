#pragma once
// The operator registry (DESIGN.md, "two axes"). Each operator kind is
// defined once, in its own file of src/ops/, with TESSERA_OPERATOR: its name,
// inputs and attributes, shape inference, reference, compute declaration (in
// the layouts its attributes name), how compile may fuse it, and its
// strategies per target. The graph (shape inference), the interpreter and
// compile look operators up here; none of them switches over operator kinds.
//
//   TESSERA_OPERATOR(hard_swish) {
//     Operator op = elementwise_operator("hard_swish");
//     op.reference = ...;
//     op.compute = ...;
//     return op;
//   }
//
// The build generates the list of definitions from the files that use the
// macro (CMake scans src/ops/*.cc), so a new operator is one new file: no
// table elsewhere names it.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ops/attrs.h"
#include "ops/common.h"
#include "ops/registry.h"

namespace tessera::ops {

// How compile may fuse a node of this kind with its neighbours (TVM's
// OpPattern, reduced to what the fuser distinguishes).
enum class FusionPattern {
  kElementwise,  // output element i reads element i of each input (broadcast allowed): joins the kernel before it
  kAnchor,       // a kernel of its own that an elementwise epilogue may join (conv2d, dense, batch_matmul)
  kOpaque,       // a kernel of its own, nothing joins it (pools, softmax, reshapes, ...)
  kSource,       // a graph input or a constant: no kernel
};

// One call of an operator, as shape inference has typed it: what the
// reference, compute declaration, and strategies are given.
struct OperatorCall {
  const Attrs& attrs;
  std::vector<Shape> input_shapes;
  Shape output_shape;
  // Which inputs are constants (weights): a strategy may want its weight packed.
  std::vector<bool> constant_inputs;
};

// A constant input the compute declaration reads in another form than the
// graph holds it in (dense's weight packed (N/bn, K, bn); a Winograd
// convolution's weight transformed): its stored shape and values.
struct StoredConstant {
  std::function<Shape(const OperatorCall& call, size_t input, const Shape& shape)> shape;
  std::function<std::vector<float>(const OperatorCall& call, size_t input, const float* value, const Shape& shape)>
      values;
};

// A template (src/autotvm, by its operator name in ops/registry.h) that
// tunes a call, and the arguments it declares the operator with.
struct TemplateCall {
  std::string op;
  OpArgs args;
};

// How the operator is scheduled on one target kind (TVM's OpStrategy entry).
// The hand-written schedule of every kernel is generic (schedule/); what an
// operator adds per target is which AutoTVM templates tune it.
struct Strategy {
  std::string target_kind;  // "llvm"
  // The template that tunes this call, or nullopt (then the generic schedule builds it).
  std::function<std::optional<TemplateCall>(const OperatorCall& call)> tunable;
};

struct Operator {
  std::string name;  // "conv2d"; what graphs print and parse
  // Inputs it takes; kVariadic: one or more.
  static constexpr int kVariadic = -1;
  int num_inputs = 1;
  FusionPattern pattern = FusionPattern::kOpaque;

  // The attributes of a call that names none (`tessera op NAME`): NoAttrs
  // for operators without attributes.
  Attrs default_attrs;
  // The output shape from the inputs' shapes; throws tessera::Error with the
  // reason (the caller prefixes the node). Validates the attributes too.
  std::function<Shape(const std::vector<Shape>& inputs, const Attrs& attrs)> infer_shape;
  // The output's storage type from the inputs' (quantized operators: int8,
  // uint8, int32); throws tessera::Error for inputs it does not take. Null:
  // float32 from float32 inputs only.
  std::function<ir::DType(const std::vector<ir::DType>& inputs, const Attrs& attrs)> infer_dtype;
  // Computes the output with plain loops, independently of `compute`: the
  // interpreter runs it and tests check every kernel against it.
  std::function<void(const OperatorCall& call, const std::vector<const float*>& inputs, float* output)> reference;
  // The operator as a tensor expression over its inputs' expressions; null
  // when compile has no kernel for it (batch_norm is folded away first).
  std::function<ir::Tensor(const OperatorCall& call, const std::vector<ir::Tensor>& inputs)> compute;
  // Whether the output is the input's bytes in the same order (a reshape):
  // compile makes it a view, no kernel. Null: never.
  std::function<bool(const OperatorCall& call)> keeps_bytes;
  // Constants stored in another form for the kernel; null: as the graph has them.
  std::optional<StoredConstant> stored_constant;
  // The attributes a tuning task knows a call by, where some do not change
  // its kernel's speed (a quantized operator's scales and zero points): calls
  // that differ only in those share one task and its records. Null: all.
  std::function<Attrs(const Attrs& attrs)> tuning_attrs;
  std::vector<Strategy> strategies;

  // The strategy for a target kind, or nullptr.
  const Strategy* strategy_for(const std::string& target_kind) const;
};

// The operator called `name`; throws tessera::Error listing the known names.
const Operator& find_operator(const std::string& name);
// Whether an operator is called `name`.
bool has_operator(const std::string& name);
// Every registered operator, sorted by name.
std::vector<const Operator*> all_operators();

// An elementwise operator of one input and no attributes: the shape passes
// through, fused as an epilogue. Definitions fill in reference and compute.
Operator unary_elementwise_operator(const std::string& name);

// Applies `f` to each element: the reference of a unary elementwise operator.
void reference_unary(const OperatorCall& call, const std::vector<const float*>& inputs, float* output,
                     float (*f)(float));

}  // namespace tessera::ops

// Defines operator NAME: the body returns its Operator. See the top of this file.
#define TESSERA_OPERATOR(NAME) ::tessera::ops::Operator tessera_define_operator_##NAME()
