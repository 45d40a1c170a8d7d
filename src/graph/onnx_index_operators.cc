// The ONNX operators that select, repeat and make tensors from shapes:
// Slice, Split, Gather, GatherElements, Trilu, Expand, ConstantOfShape,
// Range, the comparisons and logic, Where, Cast. On integers known at import
// (a shape subgraph: Shape -> Gather -> arithmetic -> Reshape) they are
// computed now and cost nothing at run time; on activations they become
// strided_slice, broadcast_to, take, where and the comparison kernels.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "graph/interpreter.h"
#include "graph/onnx_importer.h"
#include "ops/resize.h"
#include "ops/slice.h"
#include "ops/take.h"
#include "support/checked_math.h"
#include "support/quoted.h"

namespace tessera::graph::onnx_importer {
namespace {

// ONNX Slice's rules for one axis of extent `dim`: negative starts and ends
// count from the end, then both are clamped into the axis (for a negative
// step, an end of -1 means "before the first element").
struct AxisSlice {
  int64_t begin, end, step;
};

AxisSlice resolve_slice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start = start < -dim ? 0 : start + dim;
  if (end < 0) end = end < -dim ? -1 : end + dim;
  if (step > 0) return {std::clamp<int64_t>(start, 0, dim), std::clamp<int64_t>(end, 0, dim), step};
  return {std::clamp<int64_t>(start, 0, dim - 1), std::clamp<int64_t>(end, -1, dim - 1), step};
}

int64_t sliced_extent(const AxisSlice& s) {
  return s.step > 0 ? std::max<int64_t>(0, (s.end - s.begin + s.step - 1) / s.step)
                    : std::max<int64_t>(0, (s.begin - s.end - s.step - 1) / -s.step);
}

}  // namespace

NodeId Importer::slice_node(NodeId x, const std::vector<AxisRange>& ranges, const std::string& name) {
  const Shape shape = shape_of(x);
  ops::StridedSliceAttrs a;
  bool whole = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    a.begin.push_back(0), a.end.push_back(shape[d]), a.step.push_back(1);
  }
  for (const AxisRange& r : ranges) {
    a.begin[r.axis] = r.begin, a.end[r.axis] = r.end, a.step[r.axis] = r.step;
    whole = whole && r.begin == 0 && r.end == shape[r.axis] && r.step == 1;
  }
  if (whole) return x;
  return b_.add_node(Op::named("strided_slice"), name, {x}, a);
}

void Importer::slice(const onnx::NodeProto& n) {
  require_inputs(n, 3);
  const std::vector<int64_t> starts = ints(n, 1), ends = ints(n, 2);
  const Value& in = value(n.input(0), describe(n));
  const Shape shape = in.ints ? in.ints_shape : shape_of(in.node);
  const auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (n.input_size() > 3 && !n.input(3).empty()) axes = ints(n, 3);
  if (n.input_size() > 4 && !n.input(4).empty()) steps = ints(n, 4);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(describe(n) + ": starts, ends, axes and steps must have as many entries");
  std::vector<AxisRange> ranges;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank) fail(fmt::format("{}: axis {} is out of range for {} axes", describe(n), axes[i], rank));
    if (seen[static_cast<size_t>(axis)]) fail(fmt::format("{}: axis {} is given twice", describe(n), axes[i]));
    seen[static_cast<size_t>(axis)] = true;
    if (steps[i] == 0) fail(describe(n) + ": a step of 0");
    const AxisSlice s = resolve_slice(starts[i], ends[i], steps[i], shape[static_cast<size_t>(axis)]);
    // Known integers may come out empty (shape[2:] of a 2-D shape, concatenated
    // into another shape); an activation may not.
    if (sliced_extent(s) == 0 && !in.ints)
      fail(fmt::format("{}: axis {} selects no elements (an empty tensor)", describe(n), axes[i]));
    ranges.push_back({static_cast<size_t>(axis), s.begin, s.end, s.step});
  }
  if (in.ints) {  // shape arithmetic: a slice of known integers (a 1-D shape, usually)
    std::vector<AxisSlice> box;
    for (int64_t d : shape) box.push_back({0, d, 1});
    for (const AxisRange& r : ranges) box[r.axis] = {r.begin, r.end, r.step};
    Shape out_shape;
    for (const AxisSlice& b : box) out_shape.push_back(sliced_extent(b));
    std::vector<int64_t> out(static_cast<size_t>(support::bounded_product(out_shape, describe(n)))), coord;
    for (size_t i = 0; i < out.size(); ++i) {
      ops::unravel(static_cast<int64_t>(i), out_shape, coord);
      int64_t offset = 0;
      for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + box[d].begin + coord[d] * box[d].step;
      out[i] = (*in.ints)[static_cast<size_t>(offset)];
    }
    return set_ints(n, std::move(out), out_shape);
  }
  set_output(n, slice_node(in.node, ranges, name_of(n)));
}

void Importer::split(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const Shape shape = shape_of(x);
  const auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < -rank || axis >= rank) fail(fmt::format("{}: axis {} is out of range", describe(n), axis));
  if (axis < 0) axis += rank;
  const int64_t dim = shape[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes = opset_ >= 13 && n.input_size() > 1 && !n.input(1).empty() ? ints(n, 1)
                                                                                          : attr_ints(n, "split", {});
  if (sizes.empty()) {  // equal parts, the last smaller (opset 18's num_outputs)
    const int64_t parts = n.output_size(), each = (dim + parts - 1) / parts;
    for (int64_t p = 0, left = dim; p < parts; ++p, left -= each) sizes.push_back(std::min(each, left));
  }
  if (static_cast<int>(sizes.size()) != n.output_size())
    fail(fmt::format("{}: {} sizes for {} outputs", describe(n), sizes.size(), n.output_size()));
  int64_t begin = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 0) fail(fmt::format("{}: part {} has {} elements", describe(n), i, sizes[i]));
    if (begin + sizes[i] > dim) fail(fmt::format("{}: the parts sum past the axis's {} elements", describe(n), dim));
    const std::string name = n.output(static_cast<int>(i)).empty() ? name_of(n) + "." + std::to_string(i)
                                                                     : clean(n.output(static_cast<int>(i)));
    set_output(n, slice_node(x, {{static_cast<size_t>(axis), begin, begin + sizes[i], 1}}, name), static_cast<int>(i));
    begin += sizes[i];
  }
  if (begin != dim) fail(fmt::format("{}: the parts cover {} of the axis's {} elements", describe(n), begin, dim));
}

void Importer::gather(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const Value& data = value(n.input(0), describe(n));
  const Value& idx = value(n.input(1), describe(n));
  const Shape shape = data.ints ? data.ints_shape : shape_of(data.node);
  const auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < -rank || axis >= rank) fail(fmt::format("{}: axis {} is out of range for {} axes", describe(n), axis, rank));
  if (axis < 0) axis += rank;
  if (!idx.ints) {  // ids known at run time only (an embedding of token ids): a take kernel
    if (data.ints) fail(describe(n) + ": picks from integers known now by indices known only at run time");
    return set_output(n, b_.add_node(Op::named("take"), name_of(n), {data.node, idx.node}, ops::TakeAttrs{axis}));
  }
  const int64_t dim = shape[static_cast<size_t>(axis)];
  std::vector<int64_t> indices = *idx.ints;
  for (int64_t& i : indices) {
    const int64_t given = i;
    i = i < 0 ? i + dim : i;
    if (i < 0 || i >= dim) fail(fmt::format("{}: index {} is out of range for {} elements", describe(n), given, dim));
  }
  if (data.ints) {  // shape arithmetic: picking entries of a known shape
    if (rank != 1) fail(describe(n) + ": only gathers from a 1-D integer tensor are supported");
    std::vector<int64_t> out;
    for (int64_t i : indices) out.push_back((*data.ints)[i]);
    return set_ints(n, out, idx.ints_shape);
  }
  if (indices.size() > 1) {  // many rows (position embeddings): one take, folded when the table is a constant
    runtime::NDArray at(idx.ints_shape.empty() ? Shape{1} : idx.ints_shape);
    std::copy(indices.begin(), indices.end(), at.data());
    const NodeId ids = b_.constant(name_of(n) + ".indices", std::move(at));
    const NodeId taken = b_.add_node(Op::named("take"), name_of(n), {data.node, ids}, ops::TakeAttrs{axis});
    if (!idx.ints_shape.empty()) return set_output(n, taken);
    Shape out(shape.begin(), shape.begin() + axis);  // a scalar index drops the axis
    out.insert(out.end(), shape.begin() + axis + 1, shape.end());
    return set_output(n, b_.reshape(taken, out, name_of(n) + ".dropped"));
  }
  // A float tensor (a class token, one head): the index is a slice of the
  // axis, the axis replaced by the indices' shape.
  std::vector<NodeId> parts;
  for (size_t k = 0; k < indices.size(); ++k)
    parts.push_back(slice_node(data.node, {{static_cast<size_t>(axis), indices[k], indices[k] + 1, 1}},
                               name_of(n) + ".at" + std::to_string(k)));
  NodeId picked = parts.size() == 1 ? parts[0] : b_.concat(parts, axis, name_of(n) + ".picked");
  Shape out(shape.begin(), shape.begin() + axis);
  out.insert(out.end(), idx.ints_shape.begin(), idx.ints_shape.end());
  out.insert(out.end(), shape.begin() + axis + 1, shape.end());
  set_output(n, b_.reshape(picked, out, name_of(n)));
}

void Importer::gather_elements(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const Value& data = value(n.input(0), describe(n));
  const Value& idx = value(n.input(1), describe(n));
  if (!idx.ints) fail(describe(n) + ": indices computed at run time are not supported");
  const Shape shape = data.ints ? data.ints_shape : shape_of(data.node);
  const auto rank = static_cast<int64_t>(shape.size());
  int64_t axis = attr_int(n, "axis", 0);
  if (axis < -rank || axis >= rank) fail(fmt::format("{}: axis {} is out of range for {} axes", describe(n), axis, rank));
  if (axis < 0) axis += rank;
  const Shape& out = idx.ints_shape;
  if (static_cast<int64_t>(out.size()) != rank) fail(describe(n) + ": indices and data differ in rank");
  for (size_t d = 0; d < out.size(); ++d)
    if (static_cast<int64_t>(d) != axis && out[d] > shape[d])
      fail(fmt::format("{}: indices are {} on axis {}, data only {}", describe(n), out[d], d, shape[d]));
  // The element of data each output element reads, as an offset into data.
  std::vector<int64_t> offsets(idx.ints->size()), coord;
  for (size_t i = 0; i < offsets.size(); ++i) {
    ops::unravel(static_cast<int64_t>(i), out, coord);
    int64_t& at = coord[static_cast<size_t>(axis)];
    const int64_t given = (*idx.ints)[i], dim = shape[static_cast<size_t>(axis)];
    at = given < 0 ? given + dim : given;
    if (at < 0 || at >= dim) fail(fmt::format("{}: index {} is out of range for {} elements", describe(n), given, dim));
    offsets[i] = ops::broadcast_offset(shape, coord);  // coord lies inside shape: the row-major offset
  }
  if (data.ints) {
    std::vector<int64_t> picked;
    for (int64_t o : offsets) picked.push_back((*data.ints)[static_cast<size_t>(o)]);
    return set_ints(n, std::move(picked), out);
  }
  // take reads its indices as float32, exact up to 2^24.
  if (support::bounded_product(shape, describe(n)) > (int64_t{1} << 24))
    fail(describe(n) + ": data of more than 2^24 elements");
  runtime::NDArray at(out);
  std::copy(offsets.begin(), offsets.end(), at.data());
  const NodeId flat = b_.reshape(data.node, {support::bounded_product(shape, describe(n))}, name_of(n) + ".flat");
  const NodeId ids = b_.constant(name_of(n) + ".offsets", std::move(at));
  set_output(n, b_.add_node(Op::named("take"), name_of(n), {flat, ids}, ops::TakeAttrs{0}));
}

void Importer::trilu(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const Value& in = value(n.input(0), describe(n));
  const int64_t k = n.input_size() > 1 && !n.input(1).empty() ? ints(n, 1).at(0) : 0;
  const bool upper = attr_int(n, "upper", 1) != 0;
  const Shape shape = in.ints ? in.ints_shape : shape_of(in.node);
  if (shape.size() < 2) fail(describe(n) + ": needs a tensor of at least 2 axes");
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  // Whether element (i, j) of each matrix is kept: on or above diagonal k
  // (upper), on or below it (lower).
  auto kept = [&](int64_t i, int64_t j) { return upper ? j - i >= k : j - i <= k; };
  if (in.ints) {
    std::vector<int64_t> out = *in.ints;
    for (size_t e = 0; e < out.size(); ++e) {
      const auto i = static_cast<int64_t>(e) / cols % rows, j = static_cast<int64_t>(e) % cols;
      if (!kept(i, j)) out[e] = 0;
    }
    return set_ints(n, std::move(out), shape);
  }
  runtime::NDArray mask({rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[i * cols + j] = kept(i, j) ? 1.0f : 0.0f;
  set_output(n, b_.multiply(in.node, b_.constant(name_of(n) + ".mask", std::move(mask)), name_of(n)));
}

std::optional<std::vector<float>> Importer::constant_values(NodeId id, int depth) const {
  const Node& node = b_.graph().node(id);
  if (node.op == Op::kConstant) return std::vector<float>(node.value->data(), node.value->data() + node.value->size());
  if (node.op == Op::kInput || node.inputs.empty() || depth > 32) return std::nullopt;
  std::vector<runtime::NDArray> args;
  for (NodeId in : node.inputs) {
    std::optional<std::vector<float>> v = constant_values(in, depth + 1);
    if (!v) return std::nullopt;
    args.emplace_back(shape_of(in));
    std::copy(v->begin(), v->end(), args.back().data());
  }
  std::vector<const runtime::NDArray*> pointers;
  for (const runtime::NDArray& a : args) pointers.push_back(&a);
  const runtime::NDArray out = evaluate(b_.graph(), node, pointers);
  return std::vector<float>(out.data(), out.data() + out.size());
}

void Importer::scatter_nd(const onnx::NodeProto& n) {
  require_inputs(n, 3);
  if (attr_string(n, "reduction", "none") != "none")
    fail(describe(n) + ": reduction " + support::quoted(attr_string(n, "reduction", "none")) + " is not supported");
  // The data and updates as doubles (exact for both kinds), and whether they are integers.
  auto known = [&](int input, Shape& shape) -> std::optional<std::vector<double>> {
    const Value& v = value(n.input(input), describe(n));
    if (v.ints) {
      shape = v.ints_shape;
      return std::vector<double>(v.ints->begin(), v.ints->end());
    }
    std::optional<std::vector<float>> folded = constant_values(v.node);
    if (!folded) return std::nullopt;
    shape = shape_of(v.node);
    return std::vector<double>(folded->begin(), folded->end());
  };
  Shape data_shape, update_shape;
  std::optional<std::vector<double>> data = known(0, data_shape), updates = known(2, update_shape);
  const Value& idx = value(n.input(1), describe(n));
  if (!data || !updates || !idx.ints)
    fail(describe(n) + ": a scatter into or from a tensor computed at run time is not supported (only into one "
                       "known at import)");
  const Shape& idx_shape = idx.ints_shape;
  const size_t k = idx_shape.empty() ? 0 : static_cast<size_t>(idx_shape.back());
  if (idx_shape.empty() || k == 0 || k > data_shape.size())
    fail(describe(n) + ": indices " + ops::shape_to_string(idx_shape) + " do not index data " +
         ops::shape_to_string(data_shape));
  // Each index tuple picks a slice of data (its trailing axes); updates hold
  // one such slice per tuple.
  const Shape slice_shape(data_shape.begin() + static_cast<std::ptrdiff_t>(k), data_shape.end());
  const int64_t slice = support::bounded_product(slice_shape, describe(n));
  const int64_t tuples = static_cast<int64_t>(idx.ints->size() / k);
  Shape want(idx_shape.begin(), idx_shape.end() - 1);
  want.insert(want.end(), slice_shape.begin(), slice_shape.end());
  if (update_shape != want)
    fail(describe(n) + ": updates " + ops::shape_to_string(update_shape) + " should be " + ops::shape_to_string(want));
  std::vector<double> out = *data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t i = (*idx.ints)[static_cast<size_t>(t) * k + d];
      if (i < 0) i += data_shape[d];
      if (i < 0 || i >= data_shape[d])
        fail(fmt::format("{}: index {} is outside axis {} of {}", describe(n), i, d, data_shape[d]));
      offset = offset * data_shape[d] + i;
    }
    std::copy_n(updates->begin() + t * slice, slice, out.begin() + offset * slice);
  }
  if (value(n.input(0), describe(n)).ints)
    return set_ints(n, std::vector<int64_t>(out.begin(), out.end()), data_shape);
  runtime::NDArray result(data_shape.empty() ? Shape{1} : data_shape);
  std::transform(out.begin(), out.end(), result.data(), [](double v) { return static_cast<float>(v); });
  set_output(n, b_.constant(name_of(n), std::move(result)));
}

void Importer::expand(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const Shape target = ints(n, 1);
  const Value& in = value(n.input(0), describe(n));
  if (in.ints) {  // known integers repeated: computed now
    const Shape out = ops::broadcast_shape("Expand", in.ints_shape, target);
    const int64_t count = support::bounded_product(out, describe(n));
    std::vector<int64_t> values(static_cast<size_t>(count)), coord;
    for (int64_t i = 0; i < count; ++i) {
      ops::unravel(i, out, coord);
      values[static_cast<size_t>(i)] = (*in.ints)[static_cast<size_t>(ops::broadcast_offset(in.ints_shape, coord))];
    }
    return set_ints(n, values, out);
  }
  const Shape out = ops::broadcast_shape("Expand", shape_of(in.node), target);
  if (out == shape_of(in.node)) {  // nothing to repeat
    values_[n.output(0)] = in;
    return;
  }
  ops::BroadcastToAttrs a;
  a.shape = out;
  set_output(n, b_.add_node(Op::named("broadcast_to"), name_of(n), {in.node}, a));
}

void Importer::constant_of_shape(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const Shape shape = ints(n, 0);
  for (int64_t d : shape)
    if (d <= 0) fail(describe(n) + ": a shape with an extent of " + std::to_string(d) + " (an empty tensor)");
  const int64_t count = support::bounded_product(shape, describe(n));
  const auto* v = attr(n, "value");
  const int type = v ? v->t().data_type() : onnx::TensorProto::FLOAT;
  if (type == onnx::TensorProto::FLOAT) {
    const Value fill = v ? tensor_value(v->t(), describe(n) + " value") : Value{};
    const float f = v ? (*b_.graph().node(fill.node).value)[0] : 0.0f;
    runtime::NDArray a(shape.empty() ? Shape{1} : shape);
    std::fill(a.data(), a.data() + a.size(), f);
    values_[n.output(0)] = Value{b_.constant(name_of(n), std::move(a)), std::nullopt, {}};
    return;
  }
  const Value fill = tensor_value(v->t(), describe(n) + " value");
  if (!fill.ints || fill.ints->size() != 1) fail(describe(n) + ": value must hold one element");
  set_ints(n, std::vector<int64_t>(static_cast<size_t>(count), (*fill.ints)[0]), shape);
}

void Importer::range(const onnx::NodeProto& n) {
  require_inputs(n, 3);
  const Value &start = value(n.input(0), describe(n)), &limit = value(n.input(1), describe(n)),
              &delta = value(n.input(2), describe(n));
  if (start.ints && limit.ints && delta.ints) {
    const int64_t s = (*start.ints).at(0), l = (*limit.ints).at(0), d = (*delta.ints).at(0);
    if (d == 0) fail(describe(n) + ": a delta of 0");
    std::vector<int64_t> out;
    for (int64_t v = s; d > 0 ? v < l : v > l; v += d) {
      out.push_back(v);
      if (out.size() > (size_t{1} << 24)) fail(describe(n) + ": more than 2^24 values");
    }
    if (out.empty()) fail(describe(n) + ": an empty range");
    return set_ints(n, out, {static_cast<int64_t>(out.size())});
  }
  const runtime::NDArray *s = constant_of(n, 0), *l = constant_of(n, 1), *d = constant_of(n, 2);
  if (!s || !l || !d) fail(describe(n) + ": a range computed at run time is not supported");
  const double s0 = (*s)[0], l0 = (*l)[0], d0 = (*d)[0];
  if (d0 == 0 || !std::isfinite(s0) || !std::isfinite(l0) || !std::isfinite(d0)) fail(describe(n) + ": a bad delta or bound");
  const double steps = std::ceil((l0 - s0) / d0);
  if (!(steps >= 1) || steps > double(1 << 24)) fail(describe(n) + ": an empty or huge range");
  runtime::NDArray a({static_cast<int64_t>(steps)});
  for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(s0 + static_cast<double>(i) * d0);
  values_[n.output(0)] = Value{b_.constant(name_of(n), std::move(a)), std::nullopt, {}};
}

void Importer::integer_logic(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Not" || op == "IsNaN") {
    require_inputs(n, 1);
    const Value& a = value(n.input(0), describe(n));
    if (!a.ints) return set_output(n, b_.add_node(Op::named(op == "Not" ? "logical_not" : "is_nan"), name_of(n), {a.node}));
    std::vector<int64_t> out;
    for (int64_t v : *a.ints) out.push_back(op == "Not" ? v == 0 : 0);  // an integer is never NaN
    return set_ints(n, out, a.ints_shape);
  }
  require_inputs(n, 2);
  const Value& a = value(n.input(0), describe(n));
  const Value& b = value(n.input(1), describe(n));
  if (!a.ints || !b.ints) {  // on run-time values (a mask from an input): a kernel of 1.0 and 0.0
    static const std::map<std::string, std::string> kOperator = {
        {"Equal", "equal"}, {"Less", "less"},       {"Greater", "greater"},      {"LessOrEqual", "less_equal"},
        {"GreaterOrEqual", "greater_equal"},        {"And", "logical_and"},      {"Or", "logical_or"},
        {"Xor", "logical_xor"}};
    return set_output(n, b_.add_node(Op::named(kOperator.at(op)), name_of(n),
                                     {activation(n.input(0), describe(n)), activation(n.input(1), describe(n))}));
  }
  set_broadcast_ints(n, {&a, &b}, [&](const std::vector<int64_t>& v) -> int64_t {
    const int64_t x = v[0], y = v[1];
    if (op == "Equal") return x == y;
    if (op == "Less") return x < y;
    if (op == "Greater") return x > y;
    if (op == "LessOrEqual") return x <= y;
    if (op == "GreaterOrEqual") return x >= y;
    if (op == "And") return x != 0 && y != 0;
    if (op == "Or") return x != 0 || y != 0;
    return (x != 0) != (y != 0);  // Xor
  });
}

void Importer::where(const onnx::NodeProto& n) {
  require_inputs(n, 3);
  const Value& cond = value(n.input(0), describe(n));
  const Value& x = value(n.input(1), describe(n));
  const Value& y = value(n.input(2), describe(n));
  if (!cond.ints) return where_kernel(n);
  if (x.ints && y.ints)  // shape arithmetic, usually: picks of known integers
    return set_broadcast_ints(n, {&cond, &x, &y},
                              [](const std::vector<int64_t>& v) { return v[0] != 0 ? v[1] : v[2]; });
  // A condition known now that picks one side everywhere (a mask that is all
  // ones for this shape): that side, broadcast to the output's shape.
  const bool all = std::all_of(cond.ints->begin(), cond.ints->end(), [](int64_t v) { return v != 0; });
  const bool none = std::none_of(cond.ints->begin(), cond.ints->end(), [](int64_t v) { return v != 0; });
  if (!all && !none) return where_kernel(n);  // a causal mask: both sides, by position
  const NodeId picked = activation(n.input(all ? 1 : 2), describe(n));
  const Shape out = ops::broadcast_shape(
      "Where", cond.ints_shape,
      ops::broadcast_shape("Where", x.ints ? x.ints_shape : shape_of(activation(n.input(1), describe(n))),
                           y.ints ? y.ints_shape : shape_of(activation(n.input(2), describe(n)))));
  if (out == shape_of(picked)) return set_output(n, picked);
  ops::BroadcastToAttrs a;
  a.shape = out;
  set_output(n, b_.add_node(Op::named("broadcast_to"), name_of(n), {picked}, a));
}

void Importer::where_kernel(const onnx::NodeProto& n) {
  std::vector<NodeId> in;
  for (int i = 0; i < 3; ++i) in.push_back(activation(n.input(i), describe(n)));
  set_output(n, b_.add_node(Op::named("where"), name_of(n), std::move(in)));
}

void Importer::resize(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const Shape shape = shape_of(x);
  const size_t rank = shape.size();
  if (rank < 3) fail(describe(n) + ": data of " + std::to_string(rank) + " axes (resizes the last two of N, C, H, W)");
  ops::Resize2dAttrs a;
  a.mode = attr_string(n, "mode", "nearest");
  a.coordinates = attr_string(n, "coordinate_transformation_mode", "half_pixel");
  a.nearest = attr_string(n, "nearest_mode", "round_prefer_floor");
  if (a.mode == "cubic") fail(describe(n) + ": mode cubic is not supported (nearest or linear)");
  if (attr_int(n, "antialias", 0)) fail(describe(n) + ": antialias is not supported");
  if (attr_string(n, "keep_aspect_ratio_policy", "stretch") != "stretch")
    fail(describe(n) + ": keep_aspect_ratio_policy other than stretch is not supported");
  if (!attr_ints(n, "axes", {}).empty()) fail(describe(n) + ": an axes attribute is not supported");
  // Scales (input 2) or sizes (input 3): only the last two axes may change.
  std::vector<double> scales(rank, 1.0);
  Shape sizes = shape;
  const bool has_sizes = n.input_size() > 3 && !n.input(3).empty();
  if (has_sizes) {
    sizes = ints(n, 3);
    if (sizes.size() != rank) fail(describe(n) + ": sizes must have one entry per axis");
    for (size_t d = 0; d < rank; ++d) scales[d] = static_cast<double>(sizes[d]) / static_cast<double>(shape[d]);
  } else {
    const runtime::NDArray* s = n.input_size() > 2 && !n.input(2).empty() ? constant_of(n, 2) : nullptr;
    if (!s || s->size() != static_cast<int64_t>(rank)) fail(describe(n) + ": needs constant scales or sizes, one per axis");
    for (size_t d = 0; d < rank; ++d) {
      scales[d] = (*s)[static_cast<int64_t>(d)];
      if (!(scales[d] > 0)) fail(fmt::format("{}: scale {} for axis {}", describe(n), scales[d], d));
      sizes[d] = static_cast<int64_t>(std::floor(static_cast<double>(shape[d]) * static_cast<float>(scales[d])));
    }
  }
  for (size_t d = 0; d + 2 < rank; ++d)
    if (sizes[d] != shape[d]) fail(describe(n) + ": only the last two axes can be resized");
  a.out_h = sizes[rank - 2], a.out_w = sizes[rank - 1];
  a.scale_h = scales[rank - 2], a.scale_w = scales[rank - 1];
  set_output(n, b_.add_node(Op::named("resize2d"), name_of(n), {x}, a));
}

void Importer::depth_space(const onnx::NodeProto& n, bool to_space) {
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const Shape s = shape_of(x);
  const int64_t b = attr_int(n, "blocksize", 0);
  if (s.size() != 4) fail(describe(n) + ": data must be (N, C, H, W), got " + ops::shape_to_string(s));
  if (b < 1) fail(describe(n) + ": blocksize must be positive");
  const int64_t batch = s[0], c = s[1], h = s[2], w = s[3];
  if (to_space) {  // channels become b x b pixels
    if (c % (b * b) != 0) fail(fmt::format("{}: {} channels do not split into {}x{} blocks", describe(n), c, b, b));
    const bool crd = attr_string(n, "mode", "DCR") == "CRD";
    const NodeId blocks = crd ? b_.reshape(x, {batch, c / (b * b), b, b, h, w}, name_of(n) + ".blocks")
                              : b_.reshape(x, {batch, b, b, c / (b * b), h, w}, name_of(n) + ".blocks");
    const NodeId moved = b_.transpose(blocks, crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2},
                                      name_of(n) + ".moved");
    return set_output(n, b_.reshape(moved, {batch, c / (b * b), h * b, w * b}, name_of(n)));
  }
  if (h % b != 0 || w % b != 0) fail(fmt::format("{}: {}x{} pixels do not split into {}x{} blocks", describe(n), h, w, b, b));
  const NodeId blocks = b_.reshape(x, {batch, c, h / b, b, w / b, b}, name_of(n) + ".blocks");
  const NodeId moved = b_.transpose(blocks, {0, 3, 5, 1, 2, 4}, name_of(n) + ".moved");
  set_output(n, b_.reshape(moved, {batch, c * b * b, h / b, w / b}, name_of(n)));
}

void Importer::tile(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const NodeId x = activation(n.input(0), describe(n));
  const Shape s = shape_of(x);
  const std::vector<int64_t> repeats = ints(n, 1);
  if (repeats.size() != s.size()) fail(describe(n) + ": repeats must have one entry per axis");
  // Each axis d as (1, s[d]) stretched to (repeats[d], s[d]), merged back.
  Shape split, stretched, out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (repeats[d] < 1) fail(fmt::format("{}: a repeat of {} (an empty tensor)", describe(n), repeats[d]));
    split.push_back(1), split.push_back(s[d]);
    stretched.push_back(repeats[d]), stretched.push_back(s[d]);
    out.push_back(support::checked_mul(repeats[d], s[d], describe(n)));
  }
  if (out == s) {
    values_[n.output(0)] = value(n.input(0), describe(n));
    return;
  }
  ops::BroadcastToAttrs a;
  a.shape = stretched;
  const NodeId big = b_.add_node(Op::named("broadcast_to"), name_of(n) + ".stretched",
                                 {b_.reshape(x, split, name_of(n) + ".split")}, a);
  set_output(n, b_.reshape(big, out, name_of(n)));
}

void Importer::cast(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const Value& in = value(n.input(0), describe(n));
  const int64_t to = attr_int(n, "to", 0);
  const bool to_int = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
  if (in.ints && to_int) {
    values_[n.output(0)] = in;
    return;
  }
  if (in.ints && to == onnx::TensorProto::BOOL) {
    std::vector<int64_t> out;
    for (int64_t v : *in.ints) out.push_back(v != 0);
    return set_ints(n, out, in.ints_shape);
  }
  if (in.ints && to == onnx::TensorProto::FLOAT) {  // known integers as a float constant
    runtime::NDArray a(in.ints_shape.empty() ? Shape{1} : in.ints_shape);
    for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((*in.ints)[static_cast<size_t>(i)]);
    values_[n.output(0)] = Value{b_.constant(name_of(n), std::move(a)), std::nullopt, {}};
    return;
  }
  if (!in.ints && to == onnx::TensorProto::FLOAT) {
    values_[n.output(0)] = in;
    return;
  }
  const Node& source = b_.graph().node(in.node);
  if (to_int && source.op == Op::kConstant) {  // floats known now, truncated as ONNX casts them
    std::vector<int64_t> out;
    for (int64_t i = 0; i < source.value->size(); ++i) {
      const float v = (*source.value)[i];
      if (!std::isfinite(v) || std::fabs(v) > 9.0e18f) fail(describe(n) + ": a value beyond the integers");
      out.push_back(static_cast<int64_t>(v));
    }
    return set_ints(n, std::move(out), source.value->shape());
  }
  if (to_int && source.op == Op::kInput && source.type.dtype == DataType::kInt64) {  // integers stay integers
    values_[n.output(0)] = in;
    return;
  }
  if (to == onnx::TensorProto::BOOL) {  // run-time values as 1.0 and 0.0
    runtime::NDArray zero({1});
    zero[0] = 0.0f;
    return set_output(n, b_.add_node(Op::named("not_equal"), name_of(n),
                                     {in.node, b_.constant(name_of(n) + ".zero", std::move(zero))}));
  }
  fail(describe(n) + ": a cast to " + element_type_name(static_cast<int>(to)) + " is not supported");
}

}  // namespace tessera::graph::onnx_importer
