#include "ops/pooling.h"

#include <algorithm>
#include <limits>

#include "ops/operator.h"
#include "ops/pad.h"
#include "ops/quantize.h"
#include "ops/reference.h"
#include "ops/tensor_layout.h"
#include "tessera/error.h"

namespace tessera::ops {

Pool2dAttrs Pool2dAttrs::symmetric(int64_t kernel, int64_t stride, int64_t pad, bool count_include_pad) {
  Pool2dAttrs a;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  a.count_include_pad = count_include_pad;
  return a;
}

std::string Pool2dAttrs::to_string() const {
  std::string s = "pool_size=" + shape_to_string({kernel_h, kernel_w}) + " strides=" +
                  shape_to_string({stride_h, stride_w}) +
                  " padding=" + shape_to_string({pad_top, pad_left, pad_bottom, pad_right}) + " layout=" + layout;
  if (ceil_mode) s += " ceil_mode=1";
  if (count_include_pad) s += " count_include_pad=1";
  return s;
}

Pool2dAttrs with_ceil_padding(const Pool2dAttrs& a, const Shape& data, const Shape& out) {
  Pool2dAttrs p = a;
  p.ceil_mode = false;
  if (!a.ceil_mode) return p;
  const size_t h = a.h_axis(), w = a.w_axis();
  p.pad_bottom += std::max<int64_t>(0, (out[h] - 1) * a.stride_h + a.kernel_h - (data[h] + a.pad_top + a.pad_bottom));
  p.pad_right += std::max<int64_t>(0, (out[w] - 1) * a.stride_w + a.kernel_w - (data[w] + a.pad_left + a.pad_right));
  return p;
}

std::map<std::string, std::string> Pool2dAttrs::to_attrs() const {
  auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "," + std::to_string(b); };
  std::map<std::string, std::string> attrs = {{"kernel", pair(kernel_h, kernel_w)},
                                              {"strides", pair(stride_h, stride_w)},
                                              {"padding", pair(pad_top, pad_left) + "," + pair(pad_bottom, pad_right)},
                                              {"count_include_pad", count_include_pad ? "1" : "0"}};
  if (layout == "NHWC") attrs["layout"] = "NHWC";
  return attrs;
}

Shape pool2d_output_shape(const std::string& op, const Shape& data, const Pool2dAttrs& a) {
  if (a.layout == "NHWC") check_rank(op, "data (N, H, W, C)", data, 4);
  else if (data.size() != 5) check_rank(op, "data (N, C, H, W) or (N, C/x, H, W, x)", data, 4);
  check_dims_positive(op, "data", data);
  check_positive(op, "kernel_h", a.kernel_h);
  check_positive(op, "kernel_w", a.kernel_w);
  check_positive(op, "stride_h", a.stride_h);
  check_positive(op, "stride_w", a.stride_w);
  const std::pair<const char*, int64_t> pads[] = {
      {"pad_top", a.pad_top}, {"pad_bottom", a.pad_bottom}, {"pad_left", a.pad_left}, {"pad_right", a.pad_right}};
  for (auto [name, value] : pads) {
    check_non_negative(op, name, value);
    int64_t kernel = (name == std::string("pad_top") || name == std::string("pad_bottom")) ? a.kernel_h : a.kernel_w;
    if (value >= kernel)
      fail(op, std::string(name) + " must be smaller than the kernel (" + std::to_string(kernel) + "), got " + name +
                   "=" + std::to_string(value));
  }
  Shape out = data;
  const size_t h = a.h_axis(), w = a.w_axis();
  out[h] = window_output_extent(op, "height", data[h], a.pad_top, a.pad_bottom, a.kernel_h, a.stride_h, 1);
  out[w] = window_output_extent(op, "width", data[w], a.pad_left, a.pad_right, a.kernel_w, a.stride_w, 1);
  return out;
}

namespace {

ir::Tensor pad_for_pool(const ir::Tensor& data, const Pool2dAttrs& a, float value) {
  if (!a.has_padding()) return data;
  Shape before(data->shape.size(), 0), after(data->shape.size(), 0);
  before[a.h_axis()] = a.pad_top, before[a.w_axis()] = a.pad_left;
  after[a.h_axis()] = a.pad_bottom, after[a.w_axis()] = a.pad_right;
  return pad(data, before, after, value, "pad_temp");
}

// The window reduction shared by max and average pooling.
ir::Tensor pool_reduce(const ir::Tensor& padded, const Shape& out, const Pool2dAttrs& a, bool is_max,
                       const std::string& tag) {
  ir::IterVar rv0 = ir::reduce_axis(a.kernel_h, "rv0");
  ir::IterVar rv1 = ir::reduce_axis(a.kernel_w, "rv1");
  auto body = [&](const std::vector<ir::Var>& v) {
    std::vector<ir::Expr> at = to_exprs(v);
    at[a.h_axis()] = plus(scaled(v[a.h_axis()], a.stride_h), rv0.var);
    at[a.w_axis()] = plus(scaled(v[a.w_axis()], a.stride_w), rv1.var);
    ir::Expr x = ir::load(padded, at);
    return is_max ? ir::reduce_max(x, {rv0, rv1}) : ir::sum(x, {rv0, rv1});
  };
  return ir::compute(out, body, unique_name("tensor", {padded}), tag, ax_names(out.size()), a.to_attrs());
}

// Number of input (non-padding) elements along one axis in the window of output
// position `o`: min(start + kernel, extent) - max(start, 0), start = o*stride - pad.
ir::Expr valid_count(const ir::Var& o, int64_t stride, int64_t pad_before, int64_t kernel, int64_t extent) {
  ir::Expr start = minus(scaled(o, stride), pad_before);
  ir::Expr end = ir::min(plus(start, ir::Expr(kernel)), ir::Expr(extent));
  return end - (pad_before > 0 ? ir::max(start, ir::Expr(int64_t{0})) : start);
}

}  // namespace

ir::Tensor max_pool2d(const ir::Tensor& data, const Pool2dAttrs& a) {
  Shape out = pool2d_output_shape("max_pool2d", data->shape, a);
  // Quantized data (int8, uint8) pads with its type's least value: the
  // maximum of quantized values is the quantized maximum (compile stores it
  // in the node's type, compile/node_expression.cc).
  const bool quantized = data->dtype == ir::DType::Int8 || data->dtype == ir::DType::UInt8;
  ir::Tensor padded = pad_for_pool(
      data, a, quantized ? static_cast<float>(quantized_min(data->dtype)) : std::numeric_limits<float>::lowest());
  return pool_reduce(padded, out, a, /*is_max=*/true, "pool_max");
}

ir::Tensor avg_pool2d(const ir::Tensor& data, const Pool2dAttrs& a) {
  Shape out = pool2d_output_shape("avg_pool2d", data->shape, a);
  ir::Tensor padded = pad_for_pool(data, a, 0.0f);
  ir::Tensor window_sum = pool_reduce(padded, out, a, /*is_max=*/false, "pool_sum");
  const int64_t h = data->shape[a.h_axis()], w = data->shape[a.w_axis()];
  const bool pad_h = a.pad_top || a.pad_bottom, pad_w = a.pad_left || a.pad_right;
  auto body = [&](const std::vector<ir::Var>& v) -> ir::Expr {
    ir::Expr total = ir::load(window_sum, to_exprs(v));
    if (a.count_include_pad || !a.has_padding()) return total / ir::Expr(static_cast<float>(a.kernel_h * a.kernel_w));
    // Windows at the border overlap the padding: count only real elements.
    ir::Expr rows = pad_h ? valid_count(v[a.h_axis()], a.stride_h, a.pad_top, a.kernel_h, h) : ir::Expr(a.kernel_h);
    ir::Expr cols = pad_w ? valid_count(v[a.w_axis()], a.stride_w, a.pad_left, a.kernel_w, w) : ir::Expr(a.kernel_w);
    return total / ir::cast(ir::DType::Float32, rows * cols);
  };
  return ir::compute(out, body, unique_name("tensor", {window_sum}), "pool_avg", ax_names(out.size()), a.to_attrs());
}

ir::Tensor global_avg_pool2d(const ir::Tensor& data, bool nhwc) {
  const std::string op = "global_avg_pool2d";
  const bool blocked = !nhwc && data->shape.size() == 5;  // (N, C/b, H, W, b)
  if (!blocked) check_rank(op, nhwc ? "data (N, H, W, C)" : "data (N, C, H, W)", data->shape, 4);
  const Shape& s = data->shape;
  Pool2dAttrs layout;  // where H and W are (the same in NCHW and NCHW[x]c)
  layout.layout = nhwc ? "NHWC" : "NCHW";
  const size_t h = layout.h_axis(), w = layout.w_axis();
  const size_t rank = s.size();
  ir::IterVar rv0 = ir::reduce_axis(s[h], "rv0");
  ir::IterVar rv1 = ir::reduce_axis(s[w], "rv1");
  auto sum_body = [&](const std::vector<ir::Var>& v) {
    std::vector<ir::Expr> at = to_exprs(v);
    at[h] = rv0.var, at[w] = rv1.var;
    return ir::sum(ir::load(data, at), {rv0, rv1});
  };
  Shape out = s;
  out[h] = out[w] = 1;
  ir::Tensor total = ir::compute(out, sum_body, unique_name("tensor", {data}), "global_pool_sum", ax_names(rank));
  auto avg_body = [&](const std::vector<ir::Var>& v) {
    return ir::load(total, to_exprs(v)) / ir::Expr(static_cast<float>(s[h] * s[w]));
  };
  return ir::compute(out, avg_body, unique_name("tensor", {total}), "global_pool_avg", ax_names(rank));
}

}  // namespace tessera::ops

namespace tessera::ops {

int64_t pool_output_extent(int64_t in, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                           bool ceil_mode) {
  const int64_t span = in + pad_before + pad_after - kernel;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

// ---------------------------------------------------------------------------
// The max_pool2d, avg_pool2d and global_avg_pool2d operators.

namespace {

Shape pool_shape(const Shape& data, const Pool2dAttrs& a) {
  const bool blocked = is_channel_blocked(a.layout);
  const SpatialAxes ax = blocked ? SpatialAxes{1, 2, 3} : spatial_axes(a.layout);
  require_rank("data (" + a.layout + ")", data, blocked ? 5 : 4);
  if (blocked && data[4] != Layout::parse(a.layout).block_of('C'))
    shape_error("data " + shape_to_string(data) + " is not in layout " + a.layout);
  require_positive("kernel_h", a.kernel_h);
  require_positive("kernel_w", a.kernel_w);
  require_positive("stride_h", a.stride_h);
  require_positive("stride_w", a.stride_w);
  // A padding as wide as the kernel would make windows of padding alone.
  const std::pair<const char*, int64_t> pads[] = {
      {"pad_top", a.pad_top}, {"pad_bottom", a.pad_bottom}, {"pad_left", a.pad_left}, {"pad_right", a.pad_right}};
  for (auto [name, value] : pads) {
    require_non_negative(name, value);
    const int64_t kernel = name[4] == 't' || name[4] == 'b' ? a.kernel_h : a.kernel_w;
    if (value >= kernel)
      shape_error(std::string(name) + "=" + std::to_string(value) + " must be smaller than the kernel " +
                  std::to_string(kernel));
  }
  if (a.ceil_mode && a.count_include_pad) shape_error("ceil_mode with count_include_pad is not supported");
  const int64_t h = data[ax.h], w = data[ax.w];
  if (h + a.pad_top + a.pad_bottom < a.kernel_h || w + a.pad_left + a.pad_right < a.kernel_w)
    shape_error("pool window " + shape_to_string({a.kernel_h, a.kernel_w}) + " is larger than the padded input " +
                shape_to_string(data));
  Shape out = data;
  out[ax.h] = pool_output_extent(h, a.pad_top, a.pad_bottom, a.kernel_h, a.stride_h, a.ceil_mode);
  out[ax.w] = pool_output_extent(w, a.pad_left, a.pad_right, a.kernel_w, a.stride_w, a.ceil_mode);
  return out;
}

// A pooling of channel-blocked data (`layout`): unpacked to NCHW, pooled there
// by `pool_nchw(x, x_shape, out, out_shape)`, packed back into y.
template <class PoolNchw>
void reference_pool_blocked(const std::string& layout, const float* data, const Shape& data_shape,
                            const Shape& out_shape, float* y, const PoolNchw& pool_nchw) {
  const Layout blocked = Layout::parse(layout), nchw = Layout::parse("NCHW");
  const Shape xs = layout_transform_shape(data_shape, blocked, nchw);
  std::vector<float> x(static_cast<size_t>(num_elements(xs)));
  layout_transform(data, data_shape, blocked, nchw, x.data());
  const Shape ps = layout_transform_shape(out_shape, blocked, nchw);
  std::vector<float> pooled(static_cast<size_t>(num_elements(ps)));
  pool_nchw(x.data(), xs, pooled.data(), ps);
  layout_transform(pooled.data(), ps, nchw, blocked, y);
}

void require_supported_layout(const std::string& layout) {
  if (layout != "NCHW" && layout != "NHWC" && !is_channel_blocked(layout))
    throw Error("pooling in " + layout + " is not supported by the build yet");
}

Operator window_pool_operator(const std::string& name, bool is_max) {
  Operator op;
  op.name = name;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return pool_shape(in[0], attrs.as<Pool2dAttrs>());
  };
  op.reference = [is_max](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<Pool2dAttrs>();
    const Shape& xs = call.input_shapes[0];
    if (is_channel_blocked(a.layout)) {
      return reference_pool_blocked(a.layout, in[0], xs, call.output_shape, y,
                                    [&](const float* x, const Shape& s, float* out, const Shape& os) {
                                      Pool2dAttrs nchw = a;
                                      nchw.layout = "NCHW";
                                      const Pool2dAttrs p = with_ceil_padding(nchw, s, os);
                                      (is_max ? reference::max_pool2d : reference::avg_pool2d)(x, s, p, out);
                                    });
    }
    const Pool2dAttrs p = with_ceil_padding(a, xs, call.output_shape);
    if (a.layout == "NHWC") return (is_max ? reference::max_pool2d_nhwc : reference::avg_pool2d_nhwc)(in[0], xs, p, y);
    (is_max ? reference::max_pool2d : reference::avg_pool2d)(in[0], xs, p, y);
  };
  if (is_max)  // quantized values pool as they are (max_pool2d keeps their type)
    op.infer_dtype = [](const std::vector<ir::DType>& in, const Attrs&) { return in[0]; };
  op.compute = [is_max](const OperatorCall& call, const std::vector<ir::Tensor>& in) {
    const auto& a = call.attrs.as<Pool2dAttrs>();
    require_supported_layout(a.layout);
    const Pool2dAttrs p = with_ceil_padding(a, call.input_shapes[0], call.output_shape);
    return is_max ? max_pool2d(in[0], p) : avg_pool2d(in[0], p);
  };
  return op;
}

}  // namespace

}  // namespace tessera::ops

TESSERA_OPERATOR(max_pool2d) { return tessera::ops::window_pool_operator("max_pool2d", true); }

TESSERA_OPERATOR(avg_pool2d) { return tessera::ops::window_pool_operator("avg_pool2d", false); }

TESSERA_OPERATOR(global_avg_pool2d) {
  using namespace tessera::ops;
  Operator op;
  op.name = "global_avg_pool2d";
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<GlobalPoolAttrs>();
    if (is_channel_blocked(a.layout)) {  // (N, C/b, H, W, b)
      require_rank("data (" + a.layout + ")", in[0], 5);
      return Shape{in[0][0], in[0][1], 1, 1, in[0][4]};
    }
    const SpatialAxes ax = spatial_axes(a.layout);
    require_rank("data (" + a.layout + ")", in[0], 4);
    Shape out = in[0];
    out[ax.h] = out[ax.w] = 1;
    return out;
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const std::string& layout = call.attrs.as<GlobalPoolAttrs>().layout;
    if (is_channel_blocked(layout))
      return reference_pool_blocked(layout, in[0], call.input_shapes[0], call.output_shape, y,
                                    [](const float* x, const Shape& s, float* out, const Shape&) {
                                      reference::global_avg_pool2d(x, s, out);
                                    });
    if (layout == "NHWC") return reference::global_avg_pool2d_nhwc(in[0], call.input_shapes[0], y);
    reference::global_avg_pool2d(in[0], call.input_shapes[0], y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const std::string& layout = call.attrs.as<GlobalPoolAttrs>().layout;
    require_supported_layout(layout);
    return global_avg_pool2d(in[0], layout == "NHWC");
  };
  return op;
}
