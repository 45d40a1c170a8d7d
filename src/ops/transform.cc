#include "ops/transform.h"

#include <algorithm>

#include "ops/operator.h"
#include "ops/reference.h"
#include "ops/tensor_layout.h"
#include "support/checked_math.h"

namespace tessera::ops {
namespace {

// Row-major flat index of `index` in `shape`, and back.
ir::Expr ravel(const std::vector<ir::Expr>& index, const Shape& shape) {
  ir::Expr flat = index.empty() ? ir::Expr(int64_t{0}) : index[0];
  for (size_t d = 1; d < shape.size(); ++d) flat = plus(scaled(flat, shape[d]), index[d]);
  return flat;
}

std::vector<ir::Expr> unravel(const ir::Expr& flat, const Shape& shape) {
  std::vector<ir::Expr> index(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    ir::Expr q = stride == 1 ? flat : ir::floordiv(flat, ir::Expr(stride));
    index[d] = d == 0 ? q : ir::floormod(q, ir::Expr(shape[d]));
    stride *= shape[d];
  }
  return index;
}

int64_t normalized_axis(const std::string& op, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(op, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

}  // namespace

ir::Tensor reshape(const ir::Tensor& data, const Shape& newshape) {
  check_dims_positive("reshape", "newshape", newshape);
  if (num_elements(newshape) != num_elements(data->shape))
    fail("reshape", "cannot reshape " + shape_to_string(data->shape) + " to " + shape_to_string(newshape));
  auto body = [&](const std::vector<ir::Var>& v) {
    if (newshape == data->shape) return ir::load(data, to_exprs(v));
    return ir::load(data, unravel(ravel(to_exprs(v), newshape), data->shape));
  };
  return ir::compute(newshape, body, unique_name("T_reshape", {data}), "injective", ax_names(newshape.size()));
}

ir::Tensor transpose(const ir::Tensor& data, const std::vector<int64_t>& perm) {
  const size_t rank = data->shape.size();
  if (perm.size() != rank) fail("transpose", "perm must have " + std::to_string(rank) + " entries");
  std::vector<bool> seen(rank, false);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t p = normalized_axis("transpose", perm[i], rank);
    if (seen[p]) fail("transpose", "perm names axis " + std::to_string(p) + " twice");
    seen[p] = true;
    out[i] = data->shape[p];
  }
  auto body = [&](const std::vector<ir::Var>& v) {
    std::vector<ir::Expr> index(rank);
    for (size_t i = 0; i < rank; ++i) index[normalized_axis("transpose", perm[i], rank)] = v[i];
    return ir::load(data, index);
  };
  return ir::compute(out, body, unique_name("T_transpose", {data}), "injective", ax_names(rank));
}

ir::Tensor concat(const std::vector<ir::Tensor>& inputs, int64_t axis) {
  if (inputs.empty()) fail("concat", "needs at least one input");
  const size_t rank = inputs[0]->shape.size();
  const int64_t a = normalized_axis("concat", axis, rank);
  Shape out = inputs[0]->shape;
  out[a] = 0;
  for (const auto& t : inputs) {
    if (t->shape.size() != rank) fail("concat", "inputs of different ranks");
    for (size_t d = 0; d < rank; ++d)
      if (static_cast<int64_t>(d) != a && t->shape[d] != inputs[0]->shape[d])
        fail("concat", shape_to_string(t->shape) + " and " + shape_to_string(inputs[0]->shape) +
                           " differ outside axis " + std::to_string(a));
    out[a] += t->shape[a];
  }
  auto body = [&](const std::vector<ir::Var>& v) {
    // The last input first: each earlier one is selected where its range starts.
    std::vector<int64_t> start(inputs.size(), 0);
    for (size_t i = 1; i < inputs.size(); ++i) start[i] = start[i - 1] + inputs[i - 1]->shape[a];
    auto load_from = [&](size_t i) {
      std::vector<ir::Expr> index = to_exprs(v);
      index[a] = minus(index[a], start[i]);
      return ir::load(inputs[i], index);
    };
    ir::Expr value = load_from(inputs.size() - 1);
    for (size_t i = inputs.size() - 1; i-- > 0;)
      value = ir::select(ir::Expr(v[a]) < ir::Expr(start[i + 1]), load_from(i), value);
    return value;
  };
  return ir::compute(out, body, unique_name("T_concat", inputs), "injective", ax_names(rank));
}

ir::Tensor sigmoid(const ir::Tensor& x) {
  auto body = [&](const std::vector<ir::Var>& v) { return ir::call("sigmoid", {ir::load(x, to_exprs(v))}); };
  return ir::compute(x->shape, body, unique_name("T_sigmoid", {x}), "elemwise", ax_names(x->shape.size()));
}

int64_t layout_block(const std::string& layout) {
  if (layout == "NCHW" || layout == "NHWC") return 0;
  if (layout.size() > 5 && layout.rfind("NCHW", 0) == 0 && layout.back() == 'c') {
    const std::string digits = layout.substr(4, layout.size() - 5);
    if (digits.size() <= 6 && digits.find_first_not_of("0123456789") == std::string::npos) {
      const int64_t b = std::stoll(digits);
      if (b > 0) return b;
    }
  }
  fail("layout_transform", "unknown layout '" + layout.substr(0, 32) + "' (NCHW, NHWC or NCHW<b>c)");
}

Shape shape_in_layout(const Shape& nchw, const std::string& layout) {
  check_rank("layout_transform", "data", nchw, 4);
  const int64_t b = layout_block(layout);
  if (layout == "NCHW") return nchw;
  if (layout == "NHWC") return {nchw[0], nchw[2], nchw[3], nchw[1]};
  if (nchw[1] % b != 0)
    fail("layout_transform", "block " + std::to_string(b) + " does not divide " + std::to_string(nchw[1]) + " channels");
  return {nchw[0], nchw[1] / b, nchw[2], nchw[3], b};
}

ir::Tensor layout_transform(const ir::Tensor& data, const std::string& src, const std::string& dst) {
  const int64_t src_block = layout_block(src), dst_block = layout_block(dst);
  const Shape& s = data->shape;
  Shape nchw;
  if (src == "NCHW") {
    check_rank("layout_transform", "data", s, 4);
    nchw = s;
  } else if (src == "NHWC") {
    check_rank("layout_transform", "data", s, 4);
    nchw = {s[0], s[3], s[1], s[2]};
  } else {
    check_rank("layout_transform", "data", s, 5);
    if (s[4] != src_block) fail("layout_transform", "data " + shape_to_string(s) + " is not in " + src);
    nchw = {s[0], s[1] * s[4], s[2], s[3]};
  }
  const Shape out = shape_in_layout(nchw, dst);
  auto body = [&](const std::vector<ir::Var>& v) {
    // Logical (n, c, h, w) of the output position, then its place in the source.
    ir::Expr n = v[0], c, h, w;
    if (dst == "NCHW") c = v[1], h = v[2], w = v[3];
    else if (dst == "NHWC") h = v[1], w = v[2], c = v[3];
    else c = plus(scaled(v[1], dst_block), v[4]), h = v[2], w = v[3];
    if (src == "NCHW") return ir::load(data, {n, c, h, w});
    if (src == "NHWC") return ir::load(data, {n, h, w, c});
    if (dst_block == src_block) return ir::load(data, {n, v[1], h, w, v[4]});
    return ir::load(data, {n, ir::floordiv(c, ir::Expr(src_block)), h, w, ir::floormod(c, ir::Expr(src_block))});
  };
  return ir::compute(out, body, unique_name("T_layout_trans", {data}), "layout_transform", ax_names(out.size()),
                     {{"src_layout", src}, {"dst_layout", dst}});
}

bool is_identity_permutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace tessera::ops


namespace tessera::ops {
// ---------------------------------------------------------------------------
// The concat, reshape, flatten, transpose, dropout and layout_transform
// operators.

namespace {

std::string str(int64_t v) { return std::to_string(v); }

Shape concat_shape(const std::vector<Shape>& inputs, const ConcatAttrs& a) {
  const Shape& first = inputs[0];
  const int64_t axis = normalize_axis(a.axis, first.size(), "axis");
  Shape out = first;
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    bool fits = s.size() == first.size();
    for (size_t d = 0; fits && d < s.size(); ++d) fits = static_cast<int64_t>(d) == axis || s[d] == first[d];
    if (!fits)
      shape_error("input " + str(static_cast<int64_t>(i)) + " " + shape_to_string(s) + " does not match input 0 " +
                  shape_to_string(first) + " outside axis " + str(axis));
    out[axis] = support::checked_add(out[axis], s[axis], "concat");
  }
  return out;
}

Shape reshape_shape(const Shape& data, const ReshapeAttrs& a) {
  const int64_t total = num_elements(data);
  Shape out = a.newshape;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0) {
      if (i >= data.size())
        shape_error("newshape " + shape_to_string(a.newshape) + " copies axis " + str(static_cast<int64_t>(i)) +
                    " (0) that data " + shape_to_string(data) + " does not have");
      out[i] = data[i];
    }
    if (out[i] == -1) {
      if (inferred >= 0) shape_error("newshape " + shape_to_string(a.newshape) + " has more than one -1");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (out[i] < 0) shape_error("newshape " + shape_to_string(a.newshape) + " has a negative extent");
    known = support::checked_mul(known, out[i], "reshape");
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      shape_error("cannot reshape data " + shape_to_string(data) + " to " + shape_to_string(a.newshape));
    out[inferred] = total / known;
  } else if (known != total) {
    shape_error("cannot reshape data " + shape_to_string(data) + " (" + str(total) + " elements) to " +
                shape_to_string(a.newshape) + " (" + str(known) + ")");
  }
  return out;
}

// The permutation of a transpose (empty attrs: the axes reversed, as ONNX).
std::vector<int64_t> transpose_perm(const TransposeAttrs& a, size_t rank) {
  std::vector<int64_t> perm = a.perm;
  if (perm.empty())
    for (size_t d = rank; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  return perm;
}

// An operator whose output is its input's elements in the same order, under
// another shape: a view in compile, a copy in the reference.
Operator same_bytes_operator(const std::string& name) {
  Operator op;
  op.name = name;
  op.infer_dtype = [](const std::vector<ir::DType>& in, const Attrs&) { return in.at(0); };  // quantized stays so
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    std::copy(in[0], in[0] + num_elements(call.output_shape), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<ir::Tensor>& in) {
    return reshape(in[0], call.output_shape);
  };
  op.keeps_bytes = [](const OperatorCall&) { return true; };
  return op;
}

// Whether a layout takes channels as plain NCHW does for this shape: NCHW
// itself, NCHW1c, or any NCHW<b>c of a 1x1 image.
bool plain_channels(const std::string& layout, const Shape& shape) {
  return layout == "NCHW" || layout == "NCHW1c" || (layout.rfind("NCHW", 0) == 0 && shape[2] * shape[3] == 1);
}

}  // namespace

}  // namespace tessera::ops

TESSERA_OPERATOR(concat) {
  using namespace tessera::ops;
  Operator op;
  op.name = "concat";
  op.num_inputs = Operator::kVariadic;
  // Stored values side by side: quantized ones of one type stay so (an int8
  // convolution's input read twice, graph::convert_layout).
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs&) {
    for (const auto t : in)
      if (t != in.at(0)) fail("concat", "inputs stored as " + tessera::ir::to_string(in[0]) + " and " + tessera::ir::to_string(t));
    return in.at(0);
  };
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return concat_shape(in, attrs.as<ConcatAttrs>());
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto axis = normalize_axis(call.attrs.as<ConcatAttrs>().axis, call.output_shape.size(), "axis");
    reference::concat(in, call.input_shapes, static_cast<size_t>(axis), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return concat(in, call.attrs.as<ConcatAttrs>().axis);
  };
  return op;
}

namespace {

// Operators that only move values keep a quantized input's storage type.
tessera::ir::DType keeps_storage(const std::vector<tessera::ir::DType>& in, const tessera::ops::Attrs&) { return in.at(0); }

}  // namespace

TESSERA_OPERATOR(reshape) {
  using namespace tessera::ops;
  Operator op = same_bytes_operator("reshape");
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return reshape_shape(in[0], attrs.as<ReshapeAttrs>());
  };
  return op;
}

TESSERA_OPERATOR(flatten) {
  using namespace tessera::ops;
  Operator op = same_bytes_operator("flatten");
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const int64_t axis = attrs.as<FlattenAttrs>().axis, rank = static_cast<int64_t>(in[0].size());
    if (axis < 0 || axis > rank)
      shape_error("axis " + str(axis) + " is out of range for data " + shape_to_string(in[0]));
    const Shape outer(in[0].begin(), in[0].begin() + axis), inner(in[0].begin() + axis, in[0].end());
    return Shape{num_elements(outer), num_elements(inner)};
  };
  return op;
}

// Identity at inference.
TESSERA_OPERATOR(dropout) {
  using namespace tessera::ops;
  Operator op = same_bytes_operator("dropout");
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs&) { return in[0]; };
  return op;
}

TESSERA_OPERATOR(transpose) {
  using namespace tessera::ops;
  Operator op;
  op.name = "transpose";
  op.infer_dtype = keeps_storage;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const std::vector<int64_t> perm = transpose_perm(attrs.as<TransposeAttrs>(), in[0].size());
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.size() != in[0].size() || !is_identity_permutation(sorted))
      shape_error("perm " + shape_to_string(perm) + " is not a permutation of the axes of data " +
                  shape_to_string(in[0]));
    Shape out;
    for (int64_t p : perm) out.push_back(in[0][p]);
    return out;
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const Shape& x = call.input_shapes[0];
    reference::transpose(in[0], x, transpose_perm(call.attrs.as<TransposeAttrs>(), x.size()), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return transpose(in[0], transpose_perm(call.attrs.as<TransposeAttrs>(), call.input_shapes[0].size()));
  };
  return op;
}

TESSERA_OPERATOR(layout_transform) {
  using namespace tessera::ops;
  Operator op;
  op.name = "layout_transform";
  op.infer_dtype = keeps_storage;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<LayoutTransformAttrs>();
    return layout_transform_shape(in[0], Layout::parse(a.src), Layout::parse(a.dst));
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<LayoutTransformAttrs>();
    layout_transform(in[0], call.input_shapes[0], Layout::parse(a.src), Layout::parse(a.dst), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<LayoutTransformAttrs>();
    return layout_transform(in[0], a.src, a.dst);
  };
  // NCHW <-> NCHW1c, or NCHW<b>c <-> NCHW of a 1x1 image, moves no element.
  op.keeps_bytes = [](const OperatorCall& call) {
    const auto& a = call.attrs.as<LayoutTransformAttrs>();
    return plain_channels(a.src, call.input_shapes[0]) && plain_channels(a.dst, call.output_shape);
  };
  return op;
}
