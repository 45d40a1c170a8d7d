#include "graph/varying_dimension.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "graph/rewriter.h"
#include "ir/functor.h"
#include "ops/attention.h"
#include "ops/common.h"
#include "ops/operator.h"
#include "ops/softmax.h"
#include "ops/transform.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {

std::string VaryingDimension::to_string() const {
  std::string s = name + " in " + std::to_string(min) + ".." + std::to_string(max) + " (buckets";
  for (int64_t b : buckets) s += " " + std::to_string(b);
  return s + ")";
}

std::vector<int64_t> default_buckets(int64_t min, int64_t max) {
  if (min < 1 || max < min) throw Error("a varying dimension needs 1 <= min <= max, got " + std::to_string(min) +
                                        ".." + std::to_string(max));
  std::vector<int64_t> buckets;
  int64_t b = 1;
  while (b < std::max(min, max / 32)) b *= 2;
  for (; b < max; b *= 2) buckets.push_back(b);
  buckets.push_back(max);
  return buckets;
}

std::vector<int64_t> checked_buckets(std::vector<int64_t> buckets, int64_t min, int64_t max) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    const int64_t b = buckets[i];
    if (b < min || b > max)
      throw Error("bucket " + std::to_string(b) + " is outside the range " + std::to_string(min) + ".." +
                  std::to_string(max));
    if (i > 0 && b <= buckets[i - 1]) throw Error("buckets must increase: " + std::to_string(b) + " follows " +
                                                  std::to_string(buckets[i - 1]));
  }
  if (buckets.empty() || buckets.back() != max) buckets.push_back(max);
  if (buckets.size() > kMaxBuckets)
    throw Error(std::to_string(buckets.size()) + " buckets; an artifact holds at most " + std::to_string(kMaxBuckets));
  return buckets;
}

namespace {

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The axes along which `a` (at size sa of the dimension) and `b` (at sb)
// differ, each a multiple of the dimension.
VaryingAxes axes_between(const Shape& a, int64_t sa, const Shape& b, int64_t sb, const std::string& what) {
  if (a.size() != b.size())
    throw Error(what + " has rank " + std::to_string(a.size()) + " at size " + std::to_string(sa) + " and " +
                std::to_string(b.size()) + " at size " + std::to_string(sb));
  VaryingAxes axes;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d] == b[d]) continue;
    if (a[d] % sa != 0 || b[d] % sb != 0 || a[d] / sa != b[d] / sb)
      throw Error(what + "'s axis " + std::to_string(d) + " is " + std::to_string(a[d]) + " at size " +
                  std::to_string(sa) + " and " + std::to_string(b[d]) + " at size " + std::to_string(sb) +
                  ": not a multiple of the varying dimension");
    axes[static_cast<int>(d)] = a[d] / sa;
  }
  return axes;
}

// Whether `small`'s elements equal `large`'s at the same coordinates (the
// positions both sizes have).
bool agrees_on_shared_positions(const runtime::NDArray& small, const runtime::NDArray& large) {
  const Shape& s = small.shape();
  const Shape& l = large.shape();
  if (s == l) return std::memcmp(small.data(), large.data(), small.size() * sizeof(float)) == 0;
  std::vector<int64_t> coord;
  for (int64_t i = 0; i < small.size(); ++i) {
    ops::unravel(i, s, coord);
    int64_t offset = 0;
    for (size_t d = 0; d < s.size(); ++d) offset = offset * l[d] + coord[d];
    if (small[i] != large[offset] && !(small[i] != small[i] && large[offset] != large[offset])) return false;
  }
  return true;
}

// How padded positions flow through one node: the output's varying axes,
// and why padded positions would reach valid ones ("" when they do not).
struct Flow {
  VaryingAxes axes;
  std::string mixes;
  std::set<int> zeros;  // axes along which the tensor is 0 at padded positions (a masked softmax's)
};

// A view (a reshape of the same bytes): the valid positions of an input
// varying along axis a are, within each block of the axes before a, the
// first k * n rows of a; the output must hold them as whole rows of one axis.
Flow flow_through_view(const Shape& in, const Shape& out, const VaryingAxes& axes, int64_t bucket) {
  Flow f;
  for (const auto& [a, k] : axes) {
    const int64_t outer = product(in, 0, a), inner = product(in, a + 1, in.size());
    bool found = false;
    for (size_t b = 0; b < out.size() && !found; ++b) {
      const int64_t out_inner = product(out, b + 1, out.size());
      if (product(out, 0, b) != outer || (k * inner) % out_inner != 0) continue;
      const int64_t factor = k * inner / out_inner;
      if (out[b] != factor * bucket) continue;
      f.axes[static_cast<int>(b)] = factor;
      found = true;
    }
    if (!found) f.mixes = "reshapes the varying axis " + std::to_string(a) + " into positions that are not whole rows";
  }
  return f;
}

// Whether constant indices `values` (varying along `axes`) read only valid
// positions of an axis with k positions per unit: below k * min where they
// are fixed, at most their own position where they vary with it (an arange,
// a causal window); never negative (counted from the end of a bucket).
bool indices_stay_valid(const runtime::NDArray& values, const VaryingAxes& axes, int64_t k, int64_t min) {
  if (axes.size() > 1 || (axes.size() == 1 && (axes.begin()->second != 1 || k != 1))) return false;
  const Shape& shape = values.shape();
  const int axis = axes.empty() ? -1 : axes.begin()->first;
  std::vector<int64_t> coord;
  for (int64_t i = 0; i < values.size(); ++i) {
    ops::unravel(i, shape, coord);
    const float v = values[i];
    if (!(v >= 0) || (axis < 0 ? v >= static_cast<float>(k * min) : v > static_cast<float>(coord[axis]))) return false;
  }
  return true;
}

// v when e is v, v + 0 or v * 1 (a slice's begin + v * step of the whole axis).
const ir::VarNode* plain_var(const ir::Expr& e) {
  if (const auto* v = e.as<ir::VarNode>()) return v;
  const auto* b = e.as<ir::BinaryNode>();
  if (!b) return nullptr;
  const int64_t unit = e.kind() == ir::ExprKind::Add ? 0 : e.kind() == ir::ExprKind::Mul ? 1 : -1;
  if (unit < 0) return nullptr;
  if (ir::is_const_int(b->a, unit)) return plain_var(b->b);
  if (ir::is_const_int(b->b, unit)) return plain_var(b->a);
  return nullptr;
}

// The same from an operator's compute declaration: each load of a varying
// axis must be indexed by one of the output's loop variables (that axis of
// the output varies), or by a constant position every size has.
// Constant indices (a gather's) must stay among the valid positions.
class ComputeFlow {
 public:
  // `inputs`: per input, its flow (axes and zeros); `values`: its value
  // when it is a constant (else null).
  ComputeFlow(const std::vector<ir::Tensor>& inputs, const std::vector<Flow>& flows,
              const std::vector<const runtime::NDArray*>& values, int64_t bucket, int64_t min)
      : inputs_(inputs), flows_(flows), values_(values), bucket_(bucket), min_(min) {}

  Flow of(const ir::Tensor& t) {
    if (auto it = memo_.find(t.get()); it != memo_.end()) return it->second;
    Flow f;
    if (t->is_placeholder()) {
      for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputs_[i] == t) f = Flow{flows_[i].axes, "", flows_[i].zeros};
      return memo_[t.get()] = f;
    }
    const std::set<const ir::VarNode*> zeroed = zeroed_terms(*t);
    ir::post_order_visit(t->body, [&](const ir::Expr& e) {
      const auto* load = e.as<ir::TensorLoadNode>();
      if (!load) return;
      const Flow in = of(load->tensor);
      if (!in.mixes.empty() && f.mixes.empty()) f.mixes = in.mixes;
      for (const auto& [a, k] : in.axes) read_axis(*t, load->indices[a], k, zeroed, f);
    });
    return memo_[t.get()] = f;
  }

 private:
  // The reduce variables of a sum of products whose padded terms are 0: one
  // factor is 0 along the axis the variable runs over (probabilities of a
  // masked softmax, reduced by the values).
  std::set<const ir::VarNode*> zeroed_terms(const ir::TensorNode& t) {
    std::set<const ir::VarNode*> vars;
    const auto* r = t.body.as<ir::ReduceNode>();
    if (!r || r->combiner != ir::ReduceKind::Sum || r->source.kind() != ir::ExprKind::Mul) return vars;
    const auto* product = r->source.as<ir::BinaryNode>();
    for (const ir::Expr& factor : {product->a, product->b}) {
      const auto* load = factor.as<ir::TensorLoadNode>();
      if (!load) continue;
      for (int axis : of(load->tensor).zeros)
        if (const ir::VarNode* v = plain_var(load->indices[static_cast<size_t>(axis)]))
          for (const ir::IterVar& reduce : r->axes)
            if (reduce.var.get() == v) vars.insert(v);
    }
    return vars;
  }

  void read_axis(const ir::TensorNode& t, const ir::Expr& index, int64_t k,
                 const std::set<const ir::VarNode*>& zeroed, Flow& f) const {
    int64_t position = 0;
    if (ir::is_const_int(index, &position)) {
      if (position >= k * min_ && f.mixes.empty())
        f.mixes = "reads position " + std::to_string(position) + " of the varying axis, past the smallest size";
      return;
    }
    if (const ir::VarNode* v = plain_var(index)) {
      for (size_t j = 0; j < t.axes.size(); ++j) {
        if (t.axes[j].var.get() != v) continue;
        if (t.axes[j].extent != k * bucket_) {  // a fixed part of the axis (a slice): every size must have it
          if (t.axes[j].extent > k * min_ && f.mixes.empty())
            f.mixes = "reads the first " + std::to_string(t.axes[j].extent) +
                      " positions of the varying axis, past the smallest size";
          return;
        }
        auto [it, fresh] = f.axes.emplace(static_cast<int>(j), k);
        if (!fresh && it->second != k && f.mixes.empty()) f.mixes = "reads the varying axis at two rates";
        return;
      }
      if (!zeroed.count(v) && f.mixes.empty()) f.mixes = "reduces over the varying axis";
      return;
    }
    if (const runtime::NDArray* indices = constant_indices(index)) {
      if (indices_stay_valid(*indices, flows_[static_cast<size_t>(input_of(indices))].axes, k, min_)) return;
      if (f.mixes.empty()) f.mixes = "gathers padded (or negative) positions of the varying axis";
      return;
    }
    if (f.mixes.empty()) f.mixes = "reads the varying axis at computed positions (a window or a shift)";
  }

  // The constant an index expression loads, when it loads exactly one (a gather's indices).
  const runtime::NDArray* constant_indices(const ir::Expr& index) const {
    std::set<const ir::TensorNode*> loaded;
    ir::post_order_visit(index, [&](const ir::Expr& e) {
      if (const auto* l = e.as<ir::TensorLoadNode>()) loaded.insert(l->tensor.get());
    });
    if (loaded.size() != 1) return nullptr;
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i].get() == *loaded.begin()) return values_[i];
    return nullptr;
  }
  int input_of(const runtime::NDArray* value) const {
    return static_cast<int>(std::find(values_.begin(), values_.end(), value) - values_.begin());
  }

  const std::vector<ir::Tensor>& inputs_;
  const std::vector<Flow>& flows_;
  const std::vector<const runtime::NDArray*>& values_;
  const int64_t bucket_, min_;
  std::map<const ir::TensorNode*, Flow> memo_;
};

Flow flow_through(const Graph& g, const Node& n, const std::vector<Flow>& in, int64_t bucket, int64_t min) {
  const ops::Operator& op = n.op.definition();
  const ops::OperatorCall call = operator_call(g, n);
  if (op.keeps_bytes && op.keeps_bytes(call))
    return flow_through_view(call.input_shapes[0], n.type.shape, in[0].axes, bucket);
  if (!op.compute) return Flow{{}, "has no compute declaration to prove padding exact with", {}};
  std::vector<ir::Tensor> placeholders;
  std::vector<const runtime::NDArray*> values;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    Shape shape = call.input_shapes[i];
    const bool stored = call.constant_inputs[i] && op.stored_constant;
    if (stored) shape = op.stored_constant->shape(call, i, shape);
    placeholders.push_back(ir::placeholder(shape, "in" + std::to_string(i)));
    // A constant in another form than the graph's is a weight, never indices.
    values.push_back(call.constant_inputs[i] && !stored ? g.node(n.inputs[i]).value.get() : nullptr);
  }
  ir::Tensor out;
  try {
    out = op.compute(call, placeholders);
  } catch (const Error& e) {
    return Flow{{}, std::string("has no kernel to prove padding exact with (") + e.what() + ")", {}};
  }
  return ComputeFlow(placeholders, in, values, bucket, min).of(out);
}

// Whether a mask of padded keys makes `n` exact: a softmax over a varying
// axis, or attention whose keys and values vary along their rows.
int softmax_axis(const Node& n) {
  const auto rank = static_cast<int64_t>(n.type.shape.size());
  const int64_t axis = n.attrs_as<ops::SoftmaxAttrs>().axis;
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

bool maskable(const Node& n, const std::vector<Flow>& in) {
  if (n.op == Op::named("softmax")) {
    auto it = in[0].axes.find(softmax_axis(n));
    return it != in[0].axes.end() && it->second == 1;
  }
  if (n.op == Op::named("attention")) {
    const VaryingAxes rows = {{1, 1}};
    return in[1].axes == rows && in[2].axes == rows &&
           (in.size() < 4 || in[3].axes.count(3) == 0 || in[3].axes.at(3) == 1);
  }
  return false;
}

}  // namespace

PaddedGraph pad_varying_dimension(const Graph& g, int64_t bucket, const Graph& other, int64_t other_size, int64_t min) {
  const std::string sizes = " (sizes " + std::to_string(bucket) + " and " + std::to_string(other_size) + ")";
  std::vector<Flow> flows(g.size());
  std::vector<bool> mask(g.size(), false);
  PaddedGraph result;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kInput || n.op == Op::kConstant) {
      const auto there = other.find(n.name);
      if (!there || other.node(*there).op != n.op)
        throw Error(n.describe() + " has no counterpart in the model at another size of the varying dimension" + sizes);
      const Node& o = other.node(*there);
      flows[n.id].axes = axes_between(n.type.shape, bucket, o.type.shape, other_size, n.describe());
      if (n.op == Op::kInput) {
        if (!flows[n.id].axes.empty()) result.inputs[n.name] = flows[n.id].axes;
      } else if (n.value != o.value) {
        const bool smaller = bucket < other_size;
        if (!agrees_on_shared_positions(smaller ? *n.value : *o.value, smaller ? *o.value : *n.value))
          throw Error(n.describe() + ": its values depend on the size of the varying dimension beyond its extent" +
                      sizes + "; compile one size at a time");
      }
      continue;
    }
    std::vector<Flow> in;
    bool varies = false;
    for (NodeId i : n.inputs) {
      in.push_back(flows[i]);
      varies |= !flows[i].axes.empty();
    }
    if (!varies) continue;
    Flow f = flow_through(g, n, in, bucket, min);
    if (!f.mixes.empty()) {
      if (!maskable(n, in) && result.inexact.empty()) result.inexact = n.describe() + " " + f.mixes;
      mask[n.id] = true;
      f.mixes.clear();
      // A masked softmax's probabilities of padded keys are exactly 0.
      if (n.op == Op::named("softmax")) f.zeros = {softmax_axis(n)};
    }
    flows[n.id] = f;
  }
  if (!result.inexact.empty()) {  // runs at the bucket's own size only: nothing to cut
    result.graph = g;
    result.outputs.resize(g.outputs().size());
    return result;
  }
  for (NodeId out : g.outputs()) result.outputs.push_back(flows[out].axes);

  Rewriter r(g);
  NodeId mask_input = -1;
  auto mask_of_rank = [&](const std::string& name, const Shape& shape) {
    if (mask_input < 0) {
      mask_input = r.add_input(kPaddingMaskInput, TensorType{{bucket}, DataType::kFloat32});
      result.masked = true;
    }
    if (shape.size() == 1) return mask_input;
    ops::ReshapeAttrs reshape;
    reshape.newshape = shape;
    return r.add(Op::kReshape, name + ".padding_mask", {mask_input}, reshape);
  };
  for (const Node& n : g.nodes()) {
    if (!mask[n.id]) {
      r.copy(n);
      continue;
    }
    std::vector<NodeId> inputs;
    for (NodeId i : n.inputs) inputs.push_back(r.mapped(i));
    Attrs attrs = n.attrs;
    if (n.op == Op::named("softmax")) {
      Shape shape(n.type.shape.size() - static_cast<size_t>(softmax_axis(n)), 1);
      shape[0] = bucket;
      inputs[0] = r.add(Op::kAdd, n.name + ".masked", {inputs[0], mask_of_rank(n.name, shape)});
    } else {  // attention: the mask joins the scores' own (groups, heads, M, N) mask
      const NodeId keys = mask_of_rank(n.name, {1, 1, 1, bucket});
      ops::AttentionAttrs a = n.attrs_as<ops::AttentionAttrs>();
      if (a.has_mask) {
        inputs[3] = r.add(Op::kAdd, n.name + ".mask", {inputs[3], keys});
      } else {
        inputs.push_back(keys);
        a.has_mask = true;
      }
      attrs = a;
    }
    r.replace(n.id, r.add(n.op, n.name, inputs, attrs));
  }
  result.graph = r.finish();
  return result;
}

}  // namespace tessera::graph
