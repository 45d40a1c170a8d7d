// The ONNX operators as graph nodes: Conv and the pools with their window
// attributes and auto_pad, Gemm and MatMul as dense or batch_matmul, the
// elementwise and shape operators (integer shape arithmetic folded at
// import), and the dispatch by op_type.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include "graph/onnx_importer.h"
#include "ops/common.h"
#include "graph/einsum.h"
#include "ops/conv3d.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"
#include "ops/unary_math.h"
#include "support/checked_math.h"
#include "support/quoted.h"

namespace tessera::graph::onnx_importer {

std::string Importer::name_of(const onnx::NodeProto& n) const {
  return clean(!n.name().empty() ? n.name() : n.output_size() ? n.output(0) : n.op_type());
}

void Importer::require_inputs(const onnx::NodeProto& n, int least) const {
  if (n.input_size() < least || n.input(0).empty())
    fail(describe(n) + " needs " + std::to_string(least) + " inputs, has " + std::to_string(n.input_size()));
}

Importer::Window Importer::window(const onnx::NodeProto& n, const Shape& data, int64_t kh, int64_t kw) const {
  Window w{kh, kw};
  auto pair = [&](const std::string& name, int64_t& a, int64_t& b) {
    auto v = attr_ints(n, name, {a, b});
    if (v.size() != 2) fail(describe(n) + ": " + name + " must have 2 values (2-D windows only)");
    a = v[0], b = v[1];
  };
  pair("strides", w.sh, w.sw);
  pair("dilations", w.dh, w.dw);
  if (w.sh < 1 || w.sw < 1 || w.dh < 1 || w.dw < 1 || w.kh < 1 || w.kw < 1)
    fail(describe(n) + ": kernel, strides and dilations must be positive");
  auto pads = attr_ints(n, "pads", {0, 0, 0, 0});
  if (pads.size() != 4) fail(describe(n) + ": pads must have 4 values");
  w.top = pads[0], w.left = pads[1], w.bottom = pads[2], w.right = pads[3];
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto same = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t& before, int64_t& after) {
      const int64_t out = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - in);
      before = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      after = total - before;
    };
    same(data[2], kh, w.sh, w.dh, w.top, w.bottom);
    same(data[3], kw, w.sw, w.dw, w.left, w.right);
  } else if (auto_pad == "VALID") {
    w.top = w.left = w.bottom = w.right = 0;
  } else if (auto_pad != "NOTSET") {
    fail(describe(n) + ": auto_pad " + support::quoted(auto_pad) + " is not known");
  }
  return w;
}

void Importer::conv(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const NodeId x = activation(n.input(0), describe(n)), w = activation(n.input(1), describe(n));
  const Shape& ws = shape_of(w);
  if (ws.size() == 5 && shape_of(x).size() == 5) return conv3d(n, x, w);
  if (ws.size() != 4 || shape_of(x).size() != 4) fail(describe(n) + ": only 2-D and 3-D convolutions are supported");
  const Window win = window(n, shape_of(x), ws[2], ws[3]);
  Conv2dAttrs a;
  a.stride_h = win.sh, a.stride_w = win.sw, a.dilation_h = win.dh, a.dilation_w = win.dw;
  a.pad_top = win.top, a.pad_left = win.left, a.pad_bottom = win.bottom, a.pad_right = win.right;
  a.groups = attr_int(n, "group", 1);
  NodeId y = b_.conv2d(x, w, a, name_of(n));
  if (n.input_size() > 2 && !n.input(2).empty()) y = b_.bias_add(y, activation(n.input(2), describe(n)), 1, name_of(n) + ".bias");
  set_output(n, y);
}

void Importer::conv3d(const onnx::NodeProto& n, NodeId x, NodeId w) {
  const Shape xs = shape_of(x), ws = shape_of(w);
  ops::Conv3dAttrs a;
  auto three = [&](const std::string& name, std::array<int64_t, 3>& out) {
    const std::vector<int64_t> v = attr_ints(n, name, {out[0], out[1], out[2]});
    if (v.size() != 3) fail(describe(n) + ": " + name + " must have 3 values");
    std::copy(v.begin(), v.end(), out.begin());
  };
  three("strides", a.strides);
  three("dilations", a.dilations);
  const std::vector<int64_t> pads = attr_ints(n, "pads", {0, 0, 0, 0, 0, 0});
  if (pads.size() != 6) fail(describe(n) + ": pads must have 6 values");
  std::copy(pads.begin(), pads.end(), a.pads.begin());
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad == "VALID") a.pads.fill(0);
  else if (auto_pad != "NOTSET") fail(describe(n) + ": auto_pad " + support::quoted(auto_pad) + " for a 3-D convolution");
  a.groups = attr_int(n, "group", 1);
  NodeId y = b_.add_node(Op::named("conv3d"), name_of(n), {x, w}, a);
  if (n.input_size() > 2 && !n.input(2).empty()) y = b_.bias_add(y, activation(n.input(2), describe(n)), 1, name_of(n) + ".bias");
  set_output(n, y);
}

void Importer::pool(const onnx::NodeProto& n, bool is_max) {
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const auto kernel = attr_ints(n, "kernel_shape", {});
  if (kernel.size() != 2 || shape_of(x).size() != 4) fail(describe(n) + ": only 2-D pooling is supported");
  const Window win = window(n, shape_of(x), kernel[0], kernel[1]);
  if (win.dh != 1 || win.dw != 1) fail(describe(n) + ": dilated pooling is not supported");
  Pool2dAttrs a;
  a.kernel_h = win.kh, a.kernel_w = win.kw, a.stride_h = win.sh, a.stride_w = win.sw;
  a.pad_top = win.top, a.pad_left = win.left, a.pad_bottom = win.bottom, a.pad_right = win.right;
  a.ceil_mode = attr_int(n, "ceil_mode", 0) != 0;
  a.count_include_pad = attr_int(n, "count_include_pad", 0) != 0;
  set_output(n, is_max ? b_.max_pool2d(x, a, name_of(n)) : b_.avg_pool2d(x, a, name_of(n)));
}

NodeId Importer::mapped_constant(const runtime::NDArray& c, const std::string& name, float (*f)(float)) {
  runtime::NDArray out(c.shape());
  for (int64_t i = 0; i < c.size(); ++i) out[i] = f(c[i]);
  return b_.constant(name, std::move(out));
}

void Importer::gemm(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  NodeId a = activation(n.input(0), describe(n));
  if (attr_int(n, "transA", 0)) a = b_.transpose(a, {1, 0}, name_of(n) + ".transA");
  const runtime::NDArray* w = constant_of(n, 1);
  if (!w || w->shape().size() != 2) fail(describe(n) + ": B must be a constant matrix");
  const float alpha = attr_float(n, "alpha", 1.0f), beta = attr_float(n, "beta", 1.0f);
  // dense wants (N, K): B as given with transB, else transposed now.
  const bool trans_b = attr_int(n, "transB", 0) != 0;
  const int64_t rows = trans_b ? w->shape()[0] : w->shape()[1], cols = trans_b ? w->shape()[1] : w->shape()[0];
  runtime::NDArray weight({rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) weight[r * cols + c] = alpha * (*w)[trans_b ? r * cols + c : c * rows + r];
  NodeId wt = alpha == 1.0f ? quantized_dense_weight(n, 1, trans_b) : -1;
  if (wt < 0) wt = b_.constant(clean(n.input(1)) + ".weight", std::move(weight));
  NodeId y = b_.dense(a, wt, name_of(n));
  if (n.input_size() > 2 && !n.input(2).empty() && beta != 0.0f) {
    NodeId c = activation(n.input(2), describe(n));
    if (beta != 1.0f) c = b_.multiply(c, b_.constant(name_of(n) + ".beta", scalar(beta)), name_of(n) + ".beta_c");
    const bool per_column = shape_of(c) == Shape{shape_of(y)[1]};
    y = per_column ? b_.bias_add(y, c, 1, name_of(n) + ".bias") : b_.add(y, c, name_of(n) + ".bias");
  }
  set_output(n, y);
}

runtime::NDArray Importer::scalar(float v) {
  runtime::NDArray a({1});
  a[0] = v;
  return a;
}

void Importer::matmul(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const NodeId a = activation(n.input(0), describe(n));
  const Shape sa = shape_of(a);
  const runtime::NDArray* w = constant_of(n, 1);
  if (w && w->shape().size() == 2 && sa.size() >= 2) {
    const int64_t k = w->shape()[0], cols = w->shape()[1];
    if (sa.back() != k)
      fail(describe(n) + ": A " + ops::shape_to_string(sa) + " has " + std::to_string(sa.back()) + " columns, B " +
           ops::shape_to_string(w->shape()) + " has " + std::to_string(k) + " rows");
    runtime::NDArray weight({cols, k});
    for (int64_t r = 0; r < cols; ++r)
      for (int64_t c = 0; c < k; ++c) weight[r * k + c] = (*w)[c * cols + r];
    NodeId wt = quantized_dense_weight(n, 1, false);
    if (wt < 0) wt = b_.constant(clean(n.input(1)) + ".weight", std::move(weight));
    if (sa.size() == 2) return set_output(n, b_.dense(a, wt, name_of(n)));
    const int64_t rows = support::bounded_product(Shape(sa.begin(), sa.end() - 1), describe(n));
    const NodeId y = b_.dense(b_.reshape(a, {rows, k}, name_of(n) + ".rows"), wt, name_of(n) + ".dense");
    Shape out = sa;
    out.back() = cols;
    return set_output(n, b_.reshape(y, out, name_of(n)));
  }
  const NodeId b = activation(n.input(1), describe(n));
  const Shape sb = shape_of(b);
  auto refuse = [&](const std::string& why) {
    fail(describe(n) + ": A " + ops::shape_to_string(sa) + " times B " + ops::shape_to_string(sb) + ": " + why);
  };
  if (sa.size() < 2 || sb.size() < 2) refuse("1-D operands are not supported");
  const int64_t m = sa[sa.size() - 2], k = sa.back(), cols = sb.back();
  if (sb[sb.size() - 2] != k) refuse("A has " + std::to_string(k) + " columns, B " + std::to_string(sb[sb.size() - 2]) + " rows");
  // The batch axes (all but the last two) broadcast as NumPy's do: the output's.
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const Shape batch = ops::broadcast_shape("matmul", batch_a, batch_b);
  const int64_t batches = support::bounded_product(batch, describe(n));
  Shape out = batch;
  out.push_back(m);
  out.push_back(cols);
  // batch_matmul takes B as (batch, N, K): its last two axes swapped.
  std::vector<int64_t> swap_last(sb.size());
  for (size_t d = 0; d < sb.size(); ++d) swap_last[d] = static_cast<int64_t>(d);
  std::swap(swap_last[sb.size() - 2], swap_last[sb.size() - 1]);
  const NodeId bt = b_.transpose(b, swap_last, name_of(n) + ".bT");
  if (support::bounded_product(batch_b, describe(n)) == 1) {
    // One B for every batch of A (a weight computed at run time): A's
    // batches are rows of one product.
    const int64_t rows = support::bounded_product(batch, describe(n)) * m;
    const NodeId a3 = b_.reshape(a, {1, rows, k}, name_of(n) + ".a3");
    const NodeId b3 = b_.reshape(bt, {1, cols, k}, name_of(n) + ".b3");
    return set_output(n, b_.reshape(b_.batch_matmul(a3, b3, name_of(n) + ".bmm"), out, name_of(n)));
  }
  if (support::bounded_product(batch_a, describe(n)) != batches ||
      support::bounded_product(batch_b, describe(n)) != batches)
    refuse("batch axes that broadcast one operand over the other are not supported yet");
  const NodeId a3 = b_.reshape(a, {batches, m, k}, name_of(n) + ".a3");
  const NodeId b3 = b_.reshape(bt, {batches, cols, k}, name_of(n) + ".b3");
  set_output(n, b_.reshape(b_.batch_matmul(a3, b3, name_of(n) + ".bmm"), out, name_of(n)));
}

void Importer::clip(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
  if (opset_ < 11) {
    lo = attr_float(n, "min", lo), hi = attr_float(n, "max", hi);
  } else {
    auto bound = [&](int i, float& out) {
      if (n.input_size() <= i || n.input(i).empty()) return;
      const runtime::NDArray* c = constant_of(n, i);
      if (!c || c->size() != 1) fail(describe(n) + ": min and max must be constant scalars");
      out = (*c)[0];
    };
    bound(1, lo);
    bound(2, hi);
  }
  set_output(n, b_.clip(activation(n.input(0), describe(n)), lo, hi, name_of(n)));
}

void Importer::binary(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const std::string& op = n.op_type();
  if (value(n.input(0), describe(n)).ints && value(n.input(1), describe(n)).ints) return integer_binary(n);
  NodeId a = activation(n.input(0), describe(n));
  if (op == "Sub" || op == "Div") {
    // By a constant: an add or multiply, which compile folds into the
    // kernel before it as it does biases and scales.
    if (const runtime::NDArray* c = constant_of(n, 1)) {
      NodeId k = op == "Sub" ? mapped_constant(*c, clean(n.input(1)) + ".neg", [](float v) { return -v; })
                             : mapped_constant(*c, clean(n.input(1)) + ".inv", [](float v) { return 1.0f / v; });
      set_output(n, op == "Sub" ? b_.add(a, k, name_of(n)) : b_.multiply(a, k, name_of(n)));
      return;
    }
    NodeId b = activation(n.input(1), describe(n));
    set_output(n, b_.add_node(Op::named(op == "Sub" ? "subtract" : "divide"), name_of(n), {a, b}));
    return;
  }
  NodeId b = activation(n.input(1), describe(n));
  set_output(n, op == "Add" ? b_.add(a, b, name_of(n)) : b_.multiply(a, b, name_of(n)));
}

void Importer::extremum(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const Op op = Op::named(n.op_type() == "Max" ? "maximum" : "minimum");
  NodeId result = activation(n.input(0), describe(n));
  for (int i = 1; i < n.input_size(); ++i)
    result = b_.add_node(op, i + 1 == n.input_size() ? name_of(n) : name_of(n) + "." + std::to_string(i),
                         {result, activation(n.input(i), describe(n))});
  set_output(n, result);
}

void Importer::power(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  const NodeId x = activation(n.input(0), describe(n));
  // The exponents exporters write (x^2 in a layer norm's variance, x^3 in
  // the tanh GELU, x^0.5) as the operators they are: exact and vectorised,
  // where pow is libm's, one lane at a time.
  if (const runtime::NDArray* c = constant_of(n, 1); c && c->size() == 1) {
    const float e = (*c)[0];
    if (e == 1.0f) {
      values_[n.output(0)] = value(n.input(0), describe(n));
      return;
    }
    if (e == 2.0f) return set_output(n, b_.multiply(x, x, name_of(n)));
    if (e == 3.0f) return set_output(n, b_.multiply(b_.multiply(x, x, name_of(n) + ".square"), x, name_of(n)));
    if (e == 0.5f) return set_output(n, b_.add_node(Op::named("sqrt"), name_of(n), {x}));
    if (e == -1.0f) return set_output(n, b_.add_node(Op::named("reciprocal"), name_of(n), {x}));
  }
  set_output(n, b_.add_node(Op::named("power"), name_of(n), {x, activation(n.input(1), describe(n))}));
}

void Importer::layer_norm(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  for (int i = 1; i < n.output_size(); ++i)
    if (!n.output(i).empty()) fail(describe(n) + ": its Mean and InvStdDev outputs are not supported at inference");
  const NodeId x = activation(n.input(0), describe(n));
  ops::LayerNormAttrs a;
  a.axis = attr_int(n, "axis", -1);
  a.epsilon = attr_float(n, "epsilon", 1e-5f);
  const NodeId scale = activation(n.input(1), describe(n));
  NodeId bias;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    bias = activation(n.input(2), describe(n));
  } else {
    runtime::NDArray zeros(shape_of(scale));
    bias = b_.constant(name_of(n) + ".bias", std::move(zeros));
  }
  set_output(n, b_.add_node(Op::named("layer_norm"), name_of(n), {x, scale, bias}, a));
}

void Importer::integer_binary(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const bool c_remainder = attr_int(n, "fmod", 0) != 0;
  set_broadcast_ints(n, {&value(n.input(0), describe(n)), &value(n.input(1), describe(n))},
                     [&](const std::vector<int64_t>& v) -> int64_t {
                       const int64_t x = v[0], y = v[1];
                       if (op == "Add") return support::checked_add(x, y, describe(n));
                       if (op == "Sub")
                         return support::checked_add(x, -std::max(y, -std::numeric_limits<int64_t>::max()), describe(n));
                       if (op == "Mul") return support::checked_mul(x, y, describe(n));
                       if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min()))
                         fail(describe(n) + ": integer division by zero");
                       if (op == "Mod") return c_remainder ? x % y : ((x % y) + y) % y;  // C's sign of x; Python's of y
                       return x / y;
                     });
}

void Importer::transpose(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const Value& in = value(n.input(0), describe(n));
  const Shape shape = in.ints ? in.ints_shape : shape_of(in.node);
  std::vector<int64_t> perm(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(perm.size() - 1 - i);
  perm = attr_ints(n, "perm", perm);
  if (!in.ints) return set_output(n, b_.transpose(in.node, perm, name_of(n)));
  // Known integers (window indices of a shifted-window attention): moved now.
  if (perm.size() != shape.size()) fail(describe(n) + ": perm has " + std::to_string(perm.size()) + " entries for " +
                                        std::to_string(shape.size()) + " axes");
  Shape out_shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(shape.size())) fail(describe(n) + ": perm entry " + std::to_string(p) + " is out of range");
    out_shape.push_back(shape[static_cast<size_t>(p)]);
  }
  std::vector<int64_t> out(in.ints->size()), coord, from(shape.size());
  for (size_t i = 0; i < out.size(); ++i) {
    ops::unravel(static_cast<int64_t>(i), out_shape, coord);
    for (size_t d = 0; d < perm.size(); ++d) from[static_cast<size_t>(perm[d])] = coord[d];
    out[i] = (*in.ints)[static_cast<size_t>(ops::broadcast_offset(shape, from))];
  }
  set_ints(n, std::move(out), out_shape);
}

void Importer::reshape(const onnx::NodeProto& n) {
  require_inputs(n, 2);
  Shape target = ints(n, 1);
  if (attr_int(n, "allowzero", 0) && std::count(target.begin(), target.end(), 0))
    fail(describe(n) + ": allowzero with a zero extent is not supported");
  const Value& in = value(n.input(0), describe(n));
  if (in.ints) {  // shape arithmetic: reshaping known integers
    const Shape from = in.ints_shape;
    std::vector<int64_t> data = *in.ints;
    set_ints(n, std::move(data), resolve_reshape(n, from, target, static_cast<int64_t>(in.ints->size())));
    return;
  }
  set_output(n, b_.reshape(in.node, target, name_of(n)));
}

Shape Importer::resolve_reshape(const onnx::NodeProto& n, const Shape& from, Shape target, int64_t count) const {
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && i < from.size()) target[i] = from[i];
    if (target[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
      continue;
    }
    if (target[i] < 0) fail(describe(n) + ": the target shape has a bad extent " + std::to_string(target[i]));
    known = support::checked_mul(known, target[i], describe(n));
  }
  if (inferred >= 0 && known > 0 && count % known == 0) target[inferred] = count / known;
  if (support::bounded_product(target, describe(n)) != count)
    fail(describe(n) + ": cannot reshape " + std::to_string(count) + " values to the target shape");
  return target;
}

void Importer::squeeze_unsqueeze(const onnx::NodeProto& n, bool unsqueeze) {
  require_inputs(n, 1);
  std::vector<int64_t> axes = opset_ >= 13 && n.input_size() > 1 ? ints(n, 1) : attr_ints(n, "axes", {});
  const Value& in = value(n.input(0), describe(n));
  Shape shape = in.ints ? in.ints_shape : shape_of(in.node);
  // As onnxruntime does: an axis out of range, or given twice, is an error.
  const int64_t rank = static_cast<int64_t>(shape.size() + (unsqueeze ? axes.size() : 0));
  std::set<int64_t> normalized;
  for (int64_t& a : axes) {
    const int64_t given = a;
    a = a < 0 ? a + rank : a;
    if (a < 0 || a >= rank)
      fail(fmt::format("{}: axis {} is out of range for {} axes", describe(n), given, rank));
    if (!normalized.insert(a).second) fail(fmt::format("{}: axis {} is given twice", describe(n), given));
  }
  if (unsqueeze) {
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes) shape.insert(shape.begin() + a, 1);
  } else {
    std::set<int64_t> drop(axes.begin(), axes.end());
    for (int64_t a : drop)
      if (shape[static_cast<size_t>(a)] != 1)
        fail(fmt::format("{}: axis {} has size {}, not 1", describe(n), a, shape[static_cast<size_t>(a)]));
    Shape kept;
    for (int64_t d = 0; d < rank; ++d)
      if (!(axes.empty() ? shape[d] == 1 : drop.count(d) > 0)) kept.push_back(shape[d]);
    shape = kept;
  }
  if (in.ints) {
    set_ints(n, *in.ints, shape);
    return;
  }
  set_output(n, b_.reshape(in.node, shape.empty() ? Shape{1} : shape, name_of(n)));
}

void Importer::shape_op(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const Value& in = value(n.input(0), describe(n));
  Shape s = in.ints ? in.ints_shape : shape_of(in.node);
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
  start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
  end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
  set_ints(n, std::vector<int64_t>(s.begin() + start, s.begin() + std::max(start, end)), {std::max<int64_t>(0, end - start)});
}

void Importer::concat(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  bool all_ints = true;
  for (const auto& in : n.input()) all_ints = all_ints && value(in, describe(n)).ints.has_value();
  if (all_ints) {  // known integers (shapes, index tuples), along any axis
    const Shape& first = value(n.input(0), describe(n)).ints_shape;
    const auto rank = static_cast<int64_t>(std::max<size_t>(first.size(), 1));
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < -rank || axis >= rank) fail(describe(n) + ": axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    Shape out_shape = first.empty() ? Shape{1} : first;
    out_shape[static_cast<size_t>(axis)] = 0;
    for (const auto& in : n.input()) {
      const Value& v = value(in, describe(n));
      Shape s = v.ints_shape.empty() ? Shape{static_cast<int64_t>(v.ints->size())} : v.ints_shape;
      const int64_t along = s.size() == out_shape.size() ? s[static_cast<size_t>(axis)] : -1;
      s[static_cast<size_t>(axis)] = out_shape[static_cast<size_t>(axis)];
      if (along < 0 || s != out_shape)
        fail(describe(n) + ": cannot concatenate " + ops::shape_to_string(v.ints_shape) + " with " +
             ops::shape_to_string(first) + " along axis " + std::to_string(axis));
      out_shape[static_cast<size_t>(axis)] += along;
    }
    // Row-major: the blocks before the axis, each input's slab in turn.
    const int64_t outer = support::bounded_product(Shape(out_shape.begin(), out_shape.begin() + axis), describe(n));
    std::vector<int64_t> out;
    for (int64_t o = 0; o < outer; ++o)
      for (const auto& in : n.input()) {
        const auto& v = *value(in, describe(n)).ints;
        const size_t slab = v.size() / static_cast<size_t>(outer);
        out.insert(out.end(), v.begin() + static_cast<std::ptrdiff_t>(o * slab),
                   v.begin() + static_cast<std::ptrdiff_t>((o + 1) * slab));
      }
    set_ints(n, std::move(out), out_shape);
    return;
  }
  std::vector<NodeId> xs;
  for (const auto& in : n.input()) xs.push_back(activation(in, describe(n)));
  set_output(n, b_.concat(xs, attr_int(n, "axis", 0), name_of(n)));
}

void Importer::pad(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  if (attr_string(n, "mode", "constant") != "constant") fail(describe(n) + ": only constant padding is supported");
  const NodeId x = activation(n.input(0), describe(n));
  std::vector<int64_t> pads = opset_ >= 11 ? ints(n, 1) : attr_ints(n, "pads", {});
  float fill = attr_float(n, "value", 0.0f);
  if (opset_ >= 11 && n.input_size() > 2 && !n.input(2).empty()) {
    const runtime::NDArray* c = constant_of(n, 2);
    if (!c || c->size() != 1) fail(describe(n) + ": constant_value must be a constant scalar");
    fill = (*c)[0];
  }
  const size_t rank = shape_of(x).size();
  if (n.input_size() > 3 && !n.input(3).empty()) {  // opset 18: pads of the listed axes only
    const auto& axes = ints(n, 3);
    if (pads.size() != 2 * axes.size())
      fail(describe(n) + ": pads must have " + std::to_string(2 * axes.size()) + " values (2 per axis)");
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t r = static_cast<int64_t>(rank), a = axes[i] < 0 ? axes[i] + r : axes[i];
      if (a < 0 || a >= r) fail(describe(n) + ": axis " + std::to_string(axes[i]) + " is out of range");
      full[a] = pads[i], full[a + rank] = pads[i + axes.size()];
    }
    pads = full;
  }
  if (pads.size() != 2 * rank) fail(describe(n) + ": pads must have " + std::to_string(2 * rank) + " values");
  PadAttrs a;
  a.before.assign(pads.begin(), pads.begin() + rank);
  a.after.assign(pads.begin() + rank, pads.end());
  a.value = fill;
  set_output(n, b_.pad(x, a, name_of(n)));
}

void Importer::softmax(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const Shape shape = shape_of(x);
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = attr_int(n, "axis", opset_ < 13 ? 1 : -1);
  if (axis < -rank || axis >= rank) fail(describe(n) + ": axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  if (axis == rank - 1) return set_output(n, b_.softmax(x, -1, name_of(n)));
  if (opset_ < 13) {
    const int64_t outer = support::bounded_product(Shape(shape.begin(), shape.begin() + axis), describe(n));
    const int64_t inner = support::bounded_product(Shape(shape.begin() + axis, shape.end()), describe(n));
    const NodeId flat = b_.reshape(x, {outer, inner}, name_of(n) + ".2d");
    return set_output(n, b_.reshape(b_.softmax(flat, -1, name_of(n) + ".softmax"), shape, name_of(n)));
  }
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) perm[d] = d;
  std::swap(perm[axis], perm[rank - 1]);  // its own inverse
  const NodeId moved = b_.transpose(x, perm, name_of(n) + ".to_last");
  set_output(n, b_.transpose(b_.softmax(moved, -1, name_of(n) + ".softmax"), perm, name_of(n)));
}

void Importer::reduce(const onnx::NodeProto& n) {
  require_inputs(n, 1);
  const NodeId x = activation(n.input(0), describe(n));
  const std::string& op = n.op_type();
  // The axes: an input from opset 13 for ReduceSum, from 18 for the others.
  const bool axes_input = opset_ >= (op == "ReduceSum" ? 13 : 18);
  std::vector<int64_t> axes =
      axes_input ? (n.input_size() > 1 && !n.input(1).empty() ? ints(n, 1) : std::vector<int64_t>{})
                 : attr_ints(n, "axes", {});
  if (axes.empty() && attr_int(n, "noop_with_empty_axes", 0)) {
    values_[n.output(0)] = value(n.input(0), describe(n));
    return;
  }
  const bool keepdims = attr_int(n, "keepdims", 1) != 0;
  const Shape shape = shape_of(x);  // a copy: adding nodes moves the graph's
  std::vector<int64_t> normalized = axes;
  for (auto& a : normalized) a = a < 0 ? a + static_cast<int64_t>(shape.size()) : a;
  std::sort(normalized.begin(), normalized.end());
  // A mean over an NCHW tensor's spatial axes is a global pool, which follows
  // the convolution before it into its blocked layout.
  if (op == "ReduceMean" && shape.size() == 4 && normalized == std::vector<int64_t>{2, 3}) {
    NodeId y = b_.global_avg_pool2d(x, "NCHW", name_of(n));
    if (!keepdims) y = b_.reshape(y, {shape[0], shape[1]}, name_of(n) + ".squeeze");
    return set_output(n, y);
  }
  static const std::map<std::string, std::string> kReductions = {
      {"ReduceSum", "reduce_sum"}, {"ReduceMean", "reduce_mean"}, {"ReduceMax", "reduce_max"},
      {"ReduceMin", "reduce_min"}, {"ReduceL2", "reduce_l2"}};
  ops::ReduceAttrs a;
  a.axes = axes;
  a.keepdims = keepdims;
  set_output(n, b_.add_node(Op::named(kReductions.at(op)), name_of(n), {x}, a));
}

void Importer::constant(const onnx::NodeProto& n) {
  const std::string what = describe(n);
  if (const auto* a = attr(n, "value")) {
    onnx::TensorProto t = a->t();
    if (std::any_of(t.dims().begin(), t.dims().end(), [](int64_t d) { return d <= 0; })) {
      // An empty integer vector is a known shape of rank 0 (BERT's exporter
      // feeds one to ConstantOfShape for a scalar); an empty float tensor has no use.
      if (t.data_type() == onnx::TensorProto::INT64 && t.dims_size() == 1 && t.dims(0) == 0)
        return set_ints(n, {}, {0});
      fail(what + ": an empty Constant (a dimension of 0) has no value");
    }
    if (t.name().empty()) t.set_name(n.output(0));
    values_[n.output(0)] = tensor_value(t, what);
  } else if (const auto* f = attr(n, "value_float")) {
    values_[n.output(0)] = Value{b_.constant(n.output(0), scalar(f->f())), std::nullopt, {}};
  } else if (const auto* fs = attr(n, "value_floats")) {
    if (fs->floats_size() == 0) fail(what + ": an empty Constant (value_floats has no values)");
    runtime::NDArray arr({static_cast<int64_t>(fs->floats_size())});
    for (int i = 0; i < fs->floats_size(); ++i) arr[i] = fs->floats(i);
    values_[n.output(0)] = Value{b_.constant(n.output(0), std::move(arr)), std::nullopt, {}};
  } else if (const auto* i = attr(n, "value_int")) {
    set_ints(n, {i->i()}, {});
  } else if (const auto* is = attr(n, "value_ints")) {
    if (is->ints_size() == 0) fail(what + ": an empty Constant (value_ints has no values)");
    set_ints(n, std::vector<int64_t>(is->ints().begin(), is->ints().end()), {is->ints_size()});
  } else {
    fail(what + ": a Constant needs a value");
  }
}

void Importer::convert(const onnx::NodeProto& n) {
  const bool microsoft = n.domain() == "com.microsoft";
  if (!n.domain().empty() && n.domain() != "ai.onnx" && !microsoft)
    fail(describe(n) + ": operators of domain " + support::quoted(n.domain()) + " are not supported");
  if (n.output_size() == 0) fail(describe(n) + " has no outputs");
  try {
    if (microsoft) convert_microsoft(n);
    else convert_op(n);
  } catch (const Error& e) {
    const std::string m = e.what();
    if (m.rfind("ONNX model", 0) == 0) throw;
    fail(describe(n) + ": " + m);  // shape inference's message, with the ONNX node named
  }
}

void Importer::convert_op(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  auto unary = [&](NodeId (GraphBuilder::*f)(NodeId, const std::string&)) {
    require_inputs(n, 1);
    set_output(n, (b_.*f)(activation(n.input(0), describe(n)), name_of(n)));
  };
  if (op == "Conv") return conv(n);
  if (op == "MaxPool") return pool(n, true);
  if (op == "AveragePool") return pool(n, false);
  if (op == "GlobalAveragePool") {
    require_inputs(n, 1);
    const NodeId x = activation(n.input(0), describe(n));
    const auto rank = static_cast<int64_t>(shape_of(x).size());
    if (rank == 4) return set_output(n, b_.global_avg_pool2d(x, "NCHW", name_of(n)));
    if (rank < 3) fail(describe(n) + ": data of " + std::to_string(rank) + " axes");
    ops::ReduceAttrs mean;  // a video's (N, C, D, H, W): the mean over every axis after C
    for (int64_t d = 2; d < rank; ++d) mean.axes.push_back(d);
    return set_output(n, b_.add_node(Op::named("reduce_mean"), name_of(n), {x}, mean));
  }
  if (op == "Gemm") return gemm(n);
  if (op == "MatMul") return matmul(n);
  if (op == "Einsum") {
    std::vector<NodeId> operands;
    for (int i = 0; i < n.input_size(); ++i) operands.push_back(activation(n.input(i), describe(n)));
    try {
      return set_output(n, graph::einsum(b_, attr_string(n, "equation", ""), operands, name_of(n)));
    } catch (const Error& e) {
      fail(describe(n) + ": " + e.what());
    }
  }
  if (op == "BatchNormalization") {
    require_inputs(n, 5);
    std::vector<NodeId> in;
    for (int i = 0; i < 5; ++i) in.push_back(activation(n.input(i), describe(n)));
    BatchNormAttrs a;
    a.epsilon = attr_float(n, "epsilon", 1e-5f);
    return set_output(n, b_.batch_norm(in[0], in[1], in[2], in[3], in[4], a, name_of(n)));
  }
  if (op == "QuantizeLinear") return convert_quantize_linear(n);
  if (op == "DequantizeLinear") return convert_dequantize_linear(n);
  if (op == "QLinearConv") return convert_qlinear_conv(n);
  if (op == "QLinearMatMul") return convert_qlinear_matmul(n);
  if (op == "ConvInteger") return convert_conv_integer(n);
  if (op == "MatMulInteger") return convert_matmul_integer(n);
  if (op == "DynamicQuantizeLinear") return convert_dynamic_quantize_linear(n);
  if (op == "Relu") return unary(&GraphBuilder::relu);
  if (op == "Sigmoid") return unary(&GraphBuilder::sigmoid);
  // Unary operators without attributes, by the registry's names.
  static const std::map<std::string, std::string> kUnary = {
      {"HardSwish", "hard_swish"}, {"Erf", "erf"}, {"Tanh", "tanh"}, {"Exp", "exp"},
      {"Log", "log"}, {"Sqrt", "sqrt"}, {"Reciprocal", "reciprocal"}, {"Neg", "negative"},
      {"Abs", "abs"}, {"Round", "round"}};
  if (auto it = kUnary.find(op); it != kUnary.end()) {
    require_inputs(n, 1);
    return set_output(n, b_.add_node(Op::named(it->second), name_of(n), {activation(n.input(0), describe(n))}));
  }
  if (op == "Gelu") {
    require_inputs(n, 1);
    const std::string form = attr_string(n, "approximate", "none");
    if (form != "none" && form != "tanh") fail(describe(n) + ": approximate=" + support::quoted(form) + " (none or tanh)");
    return set_output(n, b_.add_node(Op::named("gelu"), name_of(n), {activation(n.input(0), describe(n))},
                                     ops::GeluAttrs{form == "tanh"}));
  }
  if (op == "HardSigmoid") {
    require_inputs(n, 1);
    ops::HardSigmoidAttrs a;
    a.alpha = attr_float(n, "alpha", 0.2f);
    a.beta = attr_float(n, "beta", 0.5f);
    return set_output(n, b_.add_node(Op::named("hard_sigmoid"), name_of(n), {activation(n.input(0), describe(n))}, a));
  }
  if (op == "Max" || op == "Min") return extremum(n);
  if (op == "Pow") return power(n);
  if (op == "LayerNormalization") return layer_norm(n);
  if (op == "Clip") return clip(n);
  if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") return binary(n);
  if (op == "Concat") return concat(n);
  if (op == "Reshape") return reshape(n);
  if (op == "Flatten") {
    require_inputs(n, 1);
    return set_output(n, b_.flatten(activation(n.input(0), describe(n)), attr_int(n, "axis", 1), name_of(n)));
  }
  if (op == "Transpose") return transpose(n);
  if (op == "Pad") return pad(n);
  if (op == "Softmax") return softmax(n);
  if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceL2")
    return reduce(n);
  if (op == "Dropout" || op == "Identity") {
    require_inputs(n, 1);
    if (op == "Dropout" && n.output_size() > 1 && !n.output(1).empty())
      fail(describe(n) + ": its mask output is not supported at inference");
    values_[n.output(0)] = value(n.input(0), describe(n));
    return;
  }
  if (op == "Constant") return constant(n);
  if (op == "Shape") return shape_op(n);
  if (op == "Gather") return gather(n);
  if (op == "GatherElements") return gather_elements(n);
  if (op == "Trilu") return trilu(n);
  if (op == "ScatterND") return scatter_nd(n);
  if (op == "Mod") {
    require_inputs(n, 2);
    if (!value(n.input(0), describe(n)).ints || !value(n.input(1), describe(n)).ints)
      fail(describe(n) + ": a remainder of values computed at run time is not supported");
    return integer_binary(n);
  }
  if (op == "Squeeze") return squeeze_unsqueeze(n, false);
  if (op == "Unsqueeze") return squeeze_unsqueeze(n, true);
  if (op == "Cast") return cast(n);
  if (op == "Resize") return resize(n);
  if (op == "DepthToSpace" || op == "SpaceToDepth") return depth_space(n, op == "DepthToSpace");
  if (op == "Tile") return tile(n);
  if (op == "Slice") return slice(n);
  if (op == "Split") return split(n);
  if (op == "Expand") return expand(n);
  if (op == "ConstantOfShape") return constant_of_shape(n);
  if (op == "Range") return range(n);
  if (op == "Where") return where(n);
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
      op == "And" || op == "Or" || op == "Xor" || op == "Not" || op == "IsNaN")
    return integer_logic(n);
  fail(describe(n) + ": operator " + support::quoted(op) + " is not supported");
}

}  // namespace tessera::graph::onnx_importer
