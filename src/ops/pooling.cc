#include "ops/pooling.h"

#include <limits>

#include "ops/pad.h"

namespace tessera::ops {

Pool2dAttrs Pool2dAttrs::symmetric(int64_t kernel, int64_t stride, int64_t pad, bool count_include_pad) {
  Pool2dAttrs a;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  a.count_include_pad = count_include_pad;
  return a;
}

std::map<std::string, std::string> Pool2dAttrs::to_attrs() const {
  auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "," + std::to_string(b); };
  std::map<std::string, std::string> attrs = {{"kernel", pair(kernel_h, kernel_w)},
                                              {"strides", pair(stride_h, stride_w)},
                                              {"padding", pair(pad_top, pad_left) + "," + pair(pad_bottom, pad_right)},
                                              {"count_include_pad", count_include_pad ? "1" : "0"}};
  if (nhwc) attrs["layout"] = "NHWC";
  return attrs;
}

Shape pool2d_output_shape(const std::string& op, const Shape& data, const Pool2dAttrs& a) {
  if (a.nhwc) check_rank(op, "data (N, H, W, C)", data, 4);
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
  ir::Tensor padded = pad_for_pool(data, a, std::numeric_limits<float>::lowest());
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
  layout.nhwc = nhwc;
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
