#include "ops/common.h"

#include <set>
#include <unordered_map>
#include <unordered_set>
#include <sstream>

#include "support/checked_math.h"
#include "tessera/error.h"

namespace tessera::ops {

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void unravel(int64_t index, const Shape& shape, std::vector<int64_t>& coord) {
  coord.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) coord[d] = index % shape[d], index /= shape[d];
}

int64_t broadcast_offset(const Shape& operand, const std::vector<int64_t>& coord) {
  const size_t lead = coord.size() - operand.size();
  int64_t offset = 0;
  for (size_t d = 0; d < operand.size(); ++d) offset = offset * operand[d] + (operand[d] == 1 ? 0 : coord[lead + d]);
  return offset;
}

int64_t num_elements(const Shape& shape) { return support::bounded_product(shape, [&] { return "shape " + shape_to_string(shape); }); }

std::string number_to_string(double value) {
  std::ostringstream s;
  s << value;
  return s.str();
}

void fail(const std::string& op, const std::string& message) { throw Error(op + ": " + message); }

void check_rank(const std::string& op, const std::string& arg, const Shape& shape, size_t rank) {
  if (shape.size() != rank)
    fail(op, arg + " must have rank " + std::to_string(rank) + ", got " + shape_to_string(shape));
}

void check_dims_positive(const std::string& op, const std::string& arg, const Shape& shape) {
  for (int64_t d : shape)
    if (d <= 0) fail(op, arg + " has a non-positive dimension: " + shape_to_string(shape));
}

void check_positive(const std::string& op, const std::string& arg, int64_t value) {
  if (value <= 0) fail(op, arg + " must be positive, got " + arg + "=" + std::to_string(value));
}

void check_non_negative(const std::string& op, const std::string& arg, int64_t value) {
  if (value < 0) fail(op, arg + " must be non-negative, got " + arg + "=" + std::to_string(value));
}

void shape_error(const std::string& message) { throw Error(message); }

int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    shape_error(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

void require_rank(const std::string& arg, const Shape& shape, size_t rank) {
  if (shape.size() != rank)
    shape_error(arg + " must have rank " + std::to_string(rank) + ", got " + shape_to_string(shape));
}

void require_positive(const std::string& what, int64_t value) {
  if (value <= 0) shape_error(what + " must be positive, got " + std::to_string(value));
}

void require_non_negative(const std::string& what, int64_t value) {
  if (value < 0) shape_error(what + " must be non-negative, got " + std::to_string(value));
}

SpatialAxes spatial_axes(const std::string& layout) {
  if (layout == "NCHW") return {1, 2, 3};
  if (layout == "NHWC") return {3, 1, 2};
  shape_error("layout " + layout + " is not supported (NCHW or NHWC)");
}

int64_t window_output_extent(const std::string& op, const std::string& axis, int64_t in,
                             int64_t pad_before, int64_t pad_after, int64_t kernel,
                             int64_t stride, int64_t dilation) {
  const std::string what = op + " " + axis;
  const int64_t padded = support::checked_add(support::checked_add(in, pad_before, what), pad_after, what);
  const int64_t span = support::checked_add(support::checked_mul(dilation, kernel - 1, what), 1, what);
  if (padded > support::kMaxExtent) fail(op, "padded input " + axis + " " + std::to_string(padded) + " exceeds 2^40");
  if (span > padded)
    fail(op, "kernel " + axis + " extent " + std::to_string(span) + " (kernel " + std::to_string(kernel) +
                 ", dilation " + std::to_string(dilation) + ") is larger than the padded input " + axis +
                 " " + std::to_string(padded));
  return (padded - span) / stride + 1;
}

namespace {

// The names upstream of the last call's inputs, kept for the next call: a
// chain of declarations (each reading the one made before) then walks only
// the new tensors, where a full walk per call made a chain of n operators
// cost n^2 (Relu x20000: minutes). It holds the tensors it has seen, so no
// freed tensor's address can come back as another one.
struct UpstreamNames {
  std::vector<ir::Tensor> roots;                   // the last call's inputs
  std::unordered_set<const ir::TensorNode*> seen;  // every tensor upstream of them (inclusive)
  std::vector<ir::Tensor> held;                    // keeps `seen` alive
  std::unordered_set<std::string> names;           // their names
  // Per base, the suffix the search for a free name starts at: `names` only
  // grows while the memo lives, so every smaller one stays taken.
  std::unordered_map<std::string, int> first_candidate;
};

thread_local UpstreamNames upstream_memo;

// Adds the tensors upstream of `start` (inclusive) to `memo`, not descending
// into those it has seen; returns how many of `roots` the walk reached.
size_t walk_upstream(const std::vector<ir::Tensor>& start, UpstreamNames& memo,
                     const std::unordered_set<const ir::TensorNode*>& roots) {
  std::unordered_set<const ir::TensorNode*> visited, roots_reached;
  std::vector<ir::Tensor> stack(start.begin(), start.end());
  while (!stack.empty()) {
    ir::Tensor t = stack.back();
    stack.pop_back();
    if (!visited.insert(t.get()).second) continue;
    if (memo.seen.count(t.get())) {
      if (roots.count(t.get())) roots_reached.insert(t.get());
      continue;
    }
    memo.seen.insert(t.get());
    memo.held.push_back(t);
    memo.names.insert(t->name);
    for (const auto& in : t->inputs()) stack.push_back(in);
  }
  return roots_reached.size();
}

}  // namespace

std::string unique_name(const std::string& base, const std::vector<ir::Tensor>& inputs) {
  UpstreamNames& memo = upstream_memo;
  std::unordered_set<const ir::TensorNode*> roots;
  for (const auto& r : memo.roots) roots.insert(r.get());
  // What the memo has seen is upstream of `inputs` when every one of its
  // roots is; otherwise it may hold names from elsewhere: start afresh.
  UpstreamNames grown = std::move(memo);
  const size_t reached = walk_upstream(inputs, grown, roots);
  if (roots.empty() || reached != roots.size()) {
    grown = UpstreamNames{};
    walk_upstream(inputs, grown, {});
  }
  grown.roots = inputs;
  memo = std::move(grown);
  if (!memo.names.count(base)) return base;
  int& first = memo.first_candidate.try_emplace(base, 1).first->second;
  for (int i = first;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!memo.names.count(candidate)) {
      first = i;
      return candidate;
    }
  }
}

ir::Expr scaled(const ir::Expr& index, int64_t factor) {
  return factor == 1 ? index : index * ir::Expr(factor);
}

ir::Expr plus(const ir::Expr& a, const ir::Expr& b) {
  if (ir::is_const_int(a, int64_t{0})) return b;
  if (ir::is_const_int(b, int64_t{0})) return a;
  return a + b;
}

ir::Expr minus(const ir::Expr& a, int64_t offset) { return offset == 0 ? a : a - ir::Expr(offset); }

std::vector<ir::Expr> to_exprs(const std::vector<ir::Var>& vars) {
  return std::vector<ir::Expr>(vars.begin(), vars.end());
}

std::vector<std::string> ax_names(size_t rank) {
  std::vector<std::string> names;
  for (size_t i = 0; i < rank; ++i) names.push_back("ax" + std::to_string(i));
  return names;
}

Reference bind_reference(const ir::ComputeDAG& dag, const std::vector<ir::Tensor>& inputs,
                         Reference in_creation_order) {
  // position_in_dag[i]: where the builder's i-th input sits in the DAG's argument list.
  std::vector<ir::Tensor> dag_inputs = dag.placeholders();
  if (dag_inputs.size() != inputs.size())
    throw Error("internal: workload has " + std::to_string(dag_inputs.size()) +
                " placeholders but its reference takes " + std::to_string(inputs.size()));
  std::vector<size_t> position_in_dag;
  for (const auto& t : inputs) {
    size_t pos = 0;
    while (pos < dag_inputs.size() && dag_inputs[pos].get() != t.get()) ++pos;
    if (pos == dag_inputs.size()) throw Error("internal: reference input '" + t->name + "' is not in the DAG");
    position_in_dag.push_back(pos);
  }
  return [position_in_dag, fn = std::move(in_creation_order)](const std::vector<const float*>& args,
                                                               float* output) {
    if (args.size() != position_in_dag.size())
      throw Error("reference: expected " + std::to_string(position_in_dag.size()) + " inputs, got " +
                  std::to_string(args.size()));
    std::vector<const float*> ordered;
    for (size_t pos : position_in_dag) ordered.push_back(args[pos]);
    fn(ordered, output);
  };
}

}  // namespace tessera::ops
