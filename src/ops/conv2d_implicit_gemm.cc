#include "ops/conv2d_implicit_gemm.h"

#include <array>

#include "ops/common.h"

namespace tessera::ops {

namespace {

constexpr int64_t kTile = 16;

int64_t round_up(int64_t x) { return (x + kTile - 1) / kTile * kTile; }

// v below `extent`, and `extent` no multiple of the tile: where a padded
// matrix's index reads the convolution, min(v, extent - 1) keeps the read in
// bounds (the value there is replaced by zero).
ir::Expr clamped(const ir::Var& v, int64_t extent, int64_t padded) {
  return extent == padded ? ir::Expr(v) : ir::min(v, ir::make_int(extent - 1));
}

ir::Expr zero_past(const ir::Expr& value, const std::vector<std::pair<ir::Var, int64_t>>& bounds,
                   const std::vector<int64_t>& padded) {
  ir::Expr inside;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (bounds[i].second == padded[i]) continue;
    const ir::Expr c = bounds[i].first < ir::make_int(bounds[i].second);
    inside = inside ? (inside && c) : c;
  }
  return inside ? ir::select(inside, value, ir::make_float(0.0)) : value;
}

// The tap (ry, rx) and channel c of reduction index k = (ry, rx, c).
std::array<ir::Expr, 3> weight_tap(const ir::Expr& kk, int64_t channels, int64_t kw) {
  const ir::Expr tap = ir::floordiv(kk, ir::make_int(channels));
  return {ir::floordiv(tap, ir::make_int(kw)), ir::floormod(tap, ir::make_int(kw)),
          ir::floormod(kk, ir::make_int(channels))};
}

// Where element (q, k) of the im2col matrix reads the padded data, k =
// (ry, rx, c) and q = (n, y, x): the image, the channel, and the window's
// row and column.
struct WindowElement {
  ir::Expr image, channel, row, column;
};
WindowElement window_element(const ir::Expr& qq, const ir::Expr& kk, int64_t channels, int64_t kw, int64_t ow,
                             int64_t pixels, const Conv2dAttrs& a) {
  const auto [ry, rx, c] = weight_tap(kk, channels, kw);
  const ir::Expr pixel = ir::floormod(qq, ir::make_int(pixels));
  return {ir::floordiv(qq, ir::make_int(pixels)), c,
          window_index(ir::floordiv(pixel, ir::make_int(ow)), ry, a.stride_h, a.dilation_h),
          window_index(ir::floormod(pixel, ir::make_int(ow)), rx, a.stride_w, a.dilation_w)};
}

// OIHW <-> OHWI: `to_ohwi` reads OIHW values of `oihw` and writes OHWI, or the reverse.
std::vector<float> transpose_weight(const float* from, const Shape& oihw, bool to_ohwi) {
  const int64_t o = oihw[0], i = oihw[1], h = oihw[2], w = oihw[3];
  std::vector<float> to(static_cast<size_t>(o * i * h * w));
  for (int64_t a = 0; a < o; ++a)
    for (int64_t c = 0; c < i; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const int64_t at_oihw = ((a * i + c) * h + y) * w + x, at_ohwi = ((a * h + y) * w + x) * i + c;
          to[to_ohwi ? at_ohwi : at_oihw] = from[to_ohwi ? at_oihw : at_ohwi];
        }
  return to;
}

}  // namespace

ir::Tensor conv2d_nchw_implicit_gemm(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  const std::string op = "conv2d_nchw_implicit_gemm";
  check_rank(op, "data", data->shape, 4);
  check_rank(op, "weight (OHWI)", weight->shape, 4);
  if (a.groups != 1) fail(op, "a grouped convolution has no single matrix product");
  const int64_t kh = weight->shape[1], kw = weight->shape[2], channels = weight->shape[3];
  const Shape out = conv2d_nchw_output_shape(data->shape, {weight->shape[0], channels, kh, kw}, a);
  const int64_t n = out[0], f = out[1], oh = out[2], ow = out[3];
  const int64_t k = channels * kh * kw, pixels = oh * ow, q = n * pixels;
  const int64_t fp = round_up(f), kp = round_up(k), qp = round_up(q);
  const ir::Tensor padded = pad_spatial(data, 2, 3, a, "pad_temp");

  const ir::Tensor weights = ir::compute(
      {fp, kp},
      [&](const std::vector<ir::Var>& v) {
        const auto [ry, rx, c] = weight_tap(clamped(v[1], k, kp), channels, kw);
        return zero_past(ir::load(weight, {clamped(v[0], f, fp), ry, rx, c}), {{v[0], f}, {v[1], k}}, {fp, kp});
      },
      unique_name("conv_weights", {weight}), "implicit_gemm_weights", {"f", "k"});
  const ir::Tensor columns = ir::compute(
      {kp, qp},
      [&](const std::vector<ir::Var>& v) {
        const WindowElement e = window_element(clamped(v[1], q, qp), clamped(v[0], k, kp), channels, kw, ow, pixels, a);
        return zero_past(ir::load(padded, {e.image, e.channel, e.row, e.column}), {{v[0], k}, {v[1], q}}, {kp, qp});
      },
      unique_name("conv_columns", {padded}), "implicit_gemm_columns", {"k", "q"});
  const ir::IterVar rk = ir::reduce_axis(kp, "rk");
  const ir::Tensor product = ir::compute(
      {fp, qp},
      [&](const std::vector<ir::Var>& v) {
        return ir::sum(ir::load(weights, {v[0], rk.var}) * ir::load(columns, {rk.var, v[1]}), {rk});
      },
      unique_name("conv_product", {weights, columns}), "conv2d_nchw_gemm", {"i", "j"});
  std::map<std::string, std::string> attrs = a.to_attrs();
  attrs["implicit_gemm"] = "1";
  return ir::compute(
      out,
      [&](const std::vector<ir::Var>& v) {
        return ir::load(product, {v[1], plus(scaled(plus(scaled(v[0], oh), v[2]), ow), v[3])});
      },
      unique_name(op, {product}), op, {"nn", "ff", "yy", "xx"}, attrs);
}

ir::Tensor conv2d_nhwc_implicit_gemm(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  const std::string op = "conv2d_nhwc_implicit_gemm";
  check_rank(op, "data", data->shape, 4);
  check_rank(op, "weight (HWIO)", weight->shape, 4);
  if (a.groups != 1) fail(op, "a grouped convolution has no single matrix product");
  const int64_t kh = weight->shape[0], kw = weight->shape[1], channels = weight->shape[2];
  const Shape out = conv2d_nhwc_output_shape(data->shape, weight->shape, a);
  const int64_t n = out[0], oh = out[1], ow = out[2], f = out[3];
  const int64_t k = channels * kh * kw, pixels = oh * ow, q = n * pixels;
  const int64_t fp = round_up(f), kp = round_up(k), qp = round_up(q);
  const ir::Tensor padded = pad_spatial(data, 1, 2, a, "pad_temp");

  const ir::Tensor columns = ir::compute(
      {qp, kp},
      [&](const std::vector<ir::Var>& v) {
        const WindowElement e = window_element(clamped(v[0], q, qp), clamped(v[1], k, kp), channels, kw, ow, pixels, a);
        return zero_past(ir::load(padded, {e.image, e.row, e.column, e.channel}), {{v[0], q}, {v[1], k}}, {qp, kp});
      },
      unique_name("conv_columns", {padded}), "implicit_gemm_columns", {"q", "k"});
  const ir::Tensor weights = ir::compute(
      {kp, fp},
      [&](const std::vector<ir::Var>& v) {
        const auto [ry, rx, c] = weight_tap(clamped(v[0], k, kp), channels, kw);
        return zero_past(ir::load(weight, {ry, rx, c, clamped(v[1], f, fp)}), {{v[0], k}, {v[1], f}}, {kp, fp});
      },
      unique_name("conv_weights", {weight}), "implicit_gemm_weights", {"k", "f"});
  const ir::IterVar rk = ir::reduce_axis(kp, "rk");
  const ir::Tensor product =
      ir::compute({qp, fp},
                  [&](const std::vector<ir::Var>& v) {
                    return ir::sum(ir::load(columns, {v[0], rk.var}) * ir::load(weights, {rk.var, v[1]}), {rk});
                  },
                  unique_name("conv_product", {columns, weights}), "conv2d_nhwc_gemm", {"i", "j"});
  std::map<std::string, std::string> attrs = a.to_attrs();
  attrs["implicit_gemm"] = "1";
  return ir::compute(
      out,
      [&](const std::vector<ir::Var>& v) {
        return ir::load(product, {plus(scaled(plus(scaled(v[0], oh), v[1]), ow), v[2]), v[3]});
      },
      unique_name(op, {product}), op, {"nn", "yy", "xx", "ff"}, attrs);
}

Shape implicit_gemm_weight_shape(const Shape& oihw) {
  check_rank("conv2d_nchw_implicit_gemm", "weight (OIHW)", oihw, 4);
  return {oihw[0], oihw[2], oihw[3], oihw[1]};
}

std::vector<float> implicit_gemm_weight(const float* oihw, const Shape& oihw_shape) {
  check_rank("conv2d_nchw_implicit_gemm", "weight (OIHW)", oihw_shape, 4);
  return transpose_weight(oihw, oihw_shape, true);
}

std::vector<float> oihw_of_implicit_gemm_weight(const float* ohwi, const Shape& ohwi_shape) {
  check_rank("conv2d_nchw_implicit_gemm", "weight (OHWI)", ohwi_shape, 4);
  return transpose_weight(ohwi, {ohwi_shape[0], ohwi_shape[3], ohwi_shape[1], ohwi_shape[2]}, false);
}

}  // namespace tessera::ops
