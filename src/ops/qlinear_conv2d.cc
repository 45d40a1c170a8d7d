#include "ops/qlinear_conv2d.h"

#include <algorithm>
#include <cmath>

#include "ops/depthwise_nchwc.h"
#include "ops/layout.h"
#include "ops/operator.h"
#include "ops/quantize.h"
#include "ops/requantize.h"
#include "ops/tensor_layout.h"

namespace tessera::ops {

std::string int8_kernel_layout(int64_t ic_bn, int64_t oc_bn) {
  return "OIHW" + std::to_string(ic_bn / 4) + "i" + std::to_string(oc_bn) + "o4i";
}

std::optional<std::pair<int64_t, int64_t>> int8_kernel_blocks(const std::string& layout) {
  // "OIHW<a>i<b>o4i"
  if (layout.rfind("OIHW", 0) != 0 || layout.size() < 9 || layout.substr(layout.size() - 2) != "4i") return std::nullopt;
  const std::string middle = layout.substr(4, layout.size() - 6);
  const size_t i = middle.find('i');
  if (i == std::string::npos || middle.empty() || middle.back() != 'o') return std::nullopt;
  try {
    size_t used = 0;
    const int64_t inner = std::stoll(middle.substr(0, i), &used);
    if (used != i) return std::nullopt;
    const std::string o = middle.substr(i + 1, middle.size() - i - 2);
    const int64_t oc_bn = std::stoll(o, &used);
    if (used != o.size() || inner < 1 || oc_bn < 1) return std::nullopt;
    return std::pair{inner * 4, oc_bn};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

// Element offsets of OIHW weight element (f, c, y, x) in the packed layout.
int64_t packed_offset(const Shape& oihw, int64_t ic_bn, int64_t oc_bn, int64_t f, int64_t c, int64_t y, int64_t x) {
  const int64_t chunks_in = oihw[1] / ic_bn;
  const int64_t ic = c % ic_bn;
  return (((((f / oc_bn) * chunks_in + c / ic_bn) * oihw[2] + y) * oihw[3] + x) * (ic_bn / 4) + ic / 4) * oc_bn * 4 +
         (f % oc_bn) * 4 + ic % 4;
}

template <class F> void for_each_weight(const Shape& oihw, const F& f) {
  for (int64_t o = 0; o < oihw[0]; ++o)
    for (int64_t c = 0; c < oihw[1]; ++c)
      for (int64_t y = 0; y < oihw[2]; ++y)
        for (int64_t x = 0; x < oihw[3]; ++x) f(o, c, y, x, ((o * oihw[1] + c) * oihw[2] + y) * oihw[3] + x);
}

}  // namespace

std::vector<float> pack_int8_kernel(const float* oihw, const Shape& shape, int64_t ic_bn, int64_t oc_bn) {
  std::vector<float> out(static_cast<size_t>(num_elements(shape)));
  for_each_weight(shape, [&](int64_t o, int64_t c, int64_t y, int64_t x, int64_t i) {
    out[static_cast<size_t>(packed_offset(shape, ic_bn, oc_bn, o, c, y, x))] = oihw[i];
  });
  return out;
}

std::vector<float> unpack_int8_kernel(const float* packed, const Shape& shape, int64_t ic_bn, int64_t oc_bn) {
  std::vector<float> out(static_cast<size_t>(num_elements(shape)));
  for_each_weight(shape, [&](int64_t o, int64_t c, int64_t y, int64_t x, int64_t i) {
    out[static_cast<size_t>(i)] = packed[packed_offset(shape, ic_bn, oc_bn, o, c, y, x)];
  });
  return out;
}

std::vector<int64_t> zero_point_share(const float* oihw, const Shape& shape, int64_t x_zero_point) {
  const int64_t per_channel = num_elements(shape) / shape[0];
  std::vector<int64_t> share(static_cast<size_t>(shape[0]));
  for (int64_t f = 0; f < shape[0]; ++f) {
    int64_t sum = 0;
    for (int64_t i = 0; i < per_channel; ++i) sum += static_cast<int64_t>(oihw[f * per_channel + i]);
    share[static_cast<size_t>(f)] = x_zero_point * sum;
  }
  return share;
}

std::string QLinearConv2dAttrs::to_string() const {
  return conv.to_string() + " x_scale=" + number_to_string(x_scale) + " x_zero_point=" + std::to_string(x_zero_point) +
         " x_dtype=" + x_dtype + " y_scale=" + number_to_string(y_scale) +
         " y_zero_point=" + std::to_string(y_zero_point) + " y_dtype=" + y_dtype + (relu ? " relu" : "") +
         (relu && clip_max > 0 ? " clip_max=" + number_to_string(clip_max) : "") +
         (power_of_two ? " power_of_two" : "") + (centered ? " centered" : "");
}

void QLinearConv2dAttrs::validate() const {
  const std::string op = "qlinear_conv2d";
  conv.validate(op);
  if (centered && (!is_blocked() || is_depthwise()))
    fail(op, "centered products are the blocked convolutions' (not depthwise), got " + conv.to_string());
  if (is_depthwise() && is_blocked()) {
    if (!is_channel_blocked(conv.data_layout) ||
        conv.kernel_layout != "OIHW1i" + std::to_string(Layout::parse(conv.data_layout).block_of('C')) + "o")
      fail(op, "blocked depthwise, computes NCHW<b>c data with an OIHW1i<b>o weight, got " + conv.to_string());
  } else if (is_blocked()) {
    const auto blocks = int8_kernel_blocks(conv.kernel_layout);
    if (!blocks || !is_channel_blocked(conv.data_layout) ||
        Layout::parse(conv.data_layout).block_of('C') != blocks->first || blocks->first % 4 != 0)
      fail(op, "blocked, computes NCHW<ic>c data with an OIHW<ic/4>i<oc>o4i weight (ic a multiple of 4), got " +
                   conv.to_string());
    if (x_dtype != "uint8") fail(op, "blocked, reads unsigned bytes (the byte dot product's), got x_dtype=" + x_dtype);
  } else if (conv.data_layout != "NCHW" || conv.kernel_layout != "OIHW") {
    fail(op, "computes NCHW data with an OIHW weight, or the int8 blocked layouts, got " + conv.to_string());
  }
  QuantizeAttrs{x_scale, x_zero_point, x_dtype}.validate(op + " input");
  QuantizeAttrs{y_scale, y_zero_point, y_dtype}.validate(op + " output");
}

Shape qlinear_conv2d_output_shape(const Shape& x, const Shape& w, const Shape& w_scale, const Shape& bias,
                                  const QLinearConv2dAttrs& a) {
  const std::string op = "qlinear_conv2d";
  a.validate();
  if (a.is_blocked() && a.is_depthwise()) {
    const int64_t bn = Layout::parse(a.conv.data_layout).block_of('C');
    if (x.size() != 5 || x[4] != bn || w.size() != 6 || w[1] != 1 || w[4] != 1 || w[5] != bn)
      fail(op, "blocked depthwise, takes data (N, C/b, H, W, b) and a weight (C/b, 1, KH, KW, 1, b), b = " +
                   std::to_string(bn) + ", got " + shape_to_string(x) + " and " + shape_to_string(w));
    QLinearConv2dAttrs plain = a;
    plain.conv = unblocked_attrs(a.conv);
    const Shape out = qlinear_conv2d_output_shape({x[0], x[1] * bn, x[2], x[3]}, {w[0] * bn, 1, w[2], w[3]}, w_scale,
                                                  bias, plain);
    return {out[0], w[0], out[2], out[3], bn};
  }
  if (a.is_blocked()) {
    const auto [ic_bn, oc_bn] = *int8_kernel_blocks(a.conv.kernel_layout);
    if (x.size() != 5 || x[4] != ic_bn)
      fail(op, "data must be (N, C/" + std::to_string(ic_bn) + ", H, W, " + std::to_string(ic_bn) + "), got " +
                   shape_to_string(x));
    if (w.size() != 7 || w[4] != ic_bn / 4 || w[5] != oc_bn || w[6] != 4)
      fail(op, "weight must be (O/" + std::to_string(oc_bn) + ", C/" + std::to_string(ic_bn) + ", KH, KW, " +
                   std::to_string(ic_bn / 4) + ", " + std::to_string(oc_bn) + ", 4), got " + shape_to_string(w));
    QLinearConv2dAttrs plain = a;
    plain.conv = unblocked_attrs(a.conv);
    plain.centered = false;  // the same shape
    const Shape out = qlinear_conv2d_output_shape({x[0], x[1] * ic_bn, x[2], x[3]},
                                                  {w[0] * oc_bn, w[1] * ic_bn, w[2], w[3]}, w_scale, bias, plain);
    return {out[0], w[0], out[2], out[3], oc_bn};
  }
  if (a.is_depthwise() && (x.size() != 4 || w.size() != 4 || w[1] != 1 || x[1] != a.conv.groups || w[0] != x[1]))
    fail(op, "groups=" + std::to_string(a.conv.groups) + ": computes one group or depthwise (groups == channels, " +
                 "weight (C, 1, KH, KW)), got data " + shape_to_string(x) + " and weight " + shape_to_string(w));
  const Shape out =
      a.is_depthwise() ? depthwise_conv2d_nchw_output_shape(x, w, a.conv) : conv2d_nchw_output_shape(x, w, a.conv);
  if (w_scale != Shape{w[0]}) fail(op, "w_scale must be (" + std::to_string(w[0]) + "), got " + shape_to_string(w_scale));
  if (bias != Shape{w[0]}) fail(op, "bias must be (" + std::to_string(w[0]) + "), got " + shape_to_string(bias));
  return out;
}

namespace {

ir::Expr requantized(const ir::Expr& total, const ir::Expr& w_scale, const QLinearConv2dAttrs& a) {
  return ops::requantized(total, w_scale, a.requantization(), "qlinear_conv2d");
}

std::map<std::string, std::string> requantize_attrs(const QLinearConv2dAttrs& a) {
  std::map<std::string, std::string> attrs = a.conv.to_attrs();
  attrs["quantization"] = a.requantization().to_string(a.x_scale, a.x_zero_point, a.x_dtype);
  return attrs;
}

}  // namespace

ir::Tensor qlinear_conv2d_nchw(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                               const ir::Tensor& bias, const QLinearConv2dAttrs& a) {
  const Shape out = qlinear_conv2d_output_shape(x->shape, w->shape, w_scale->shape, bias->shape, a);
  if (a.is_blocked()) fail("qlinear_conv2d", "qlinear_conv2d_nchw computes NCHW, got " + a.conv.to_string());
  const ir::Tensor padded = pad_spatial(x, 2, 3, a.conv, "pad_temp", static_cast<float>(a.x_zero_point));

  const ir::IterVar wc = ir::reduce_axis(w->shape[1], "wc"), wy = ir::reduce_axis(w->shape[2], "wy"),
                    wx = ir::reduce_axis(w->shape[3], "wx");
  const ir::Tensor weight_sum = ir::compute(
      {w->shape[0]},
      [&](const std::vector<ir::Var>& v) { return ir::sum(ir::load(w, {v[0], wc.var, wy.var, wx.var}), {wc, wy, wx}); },
      unique_name("qconv_weight_sum", {w}), "qconv_weight_sum", {"f"});

  const ir::IterVar rc = ir::reduce_axis(w->shape[1], "rc"), ry = ir::reduce_axis(w->shape[2], "ry"),
                    rx = ir::reduce_axis(w->shape[3], "rx");
  auto products = [&](const std::vector<ir::Var>& v) {
    const ir::Var &nn = v[0], &ff = v[1], &yy = v[2], &xx = v[3];
    const ir::Expr channel = a.is_depthwise() ? plus(ff, rc.var) : ir::Expr(rc.var);  // depthwise: rc is 0
    return ir::sum(ir::load(padded, {nn, channel, window_index(yy, ry.var, a.conv.stride_h, a.conv.dilation_h),
                                     window_index(xx, rx.var, a.conv.stride_w, a.conv.dilation_w)}) *
                       ir::load(w, {ff, rc.var, ry.var, rx.var}),
                   {rc, ry, rx});
  };
  const ir::Tensor acc = ir::compute(out, products, unique_name("qlinear_conv2d_nchw", {padded, w}),
                                     "qlinear_conv2d_nchw", {"nn", "ff", "yy", "xx"}, a.conv.to_attrs());

  auto requantize = [&](const std::vector<ir::Var>& v) {
    const ir::Var& f = v[1];
    return requantized(ir::load(acc, to_exprs(v)) - ir::load(weight_sum, {f}) * ir::Expr(a.x_zero_point) +
                           ir::load(bias, {f}),
                       ir::load(w_scale, {f}), a);
  };
  return ir::compute(out, requantize, unique_name("T_requantize", {acc}), "qlinear_conv2d_requantize",
                     {"n", "f", "y", "x"}, requantize_attrs(a));
}

ir::Tensor qlinear_conv2d_nchwc(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                                const ir::Tensor& bias, const QLinearConv2dAttrs& a) {
  Shape out = qlinear_conv2d_output_shape(x->shape, w->shape, w_scale->shape, bias->shape, a);
  const int64_t out_w = out[3], oc_bn = w->shape[5];
  const bool flat = w->shape[2] == 1 && w->shape[3] == 1 && !a.conv.has_padding();
  if (flat) out = {out[0], out[1], 1, out[2] * out[3], out[4]};
  const ir::Tensor padded = pad_spatial(x, 2, 3, a.conv, "data_pad", static_cast<float>(a.x_zero_point));
  const ir::IterVar ic_outer = ir::reduce_axis(w->shape[1], "ic_outer"), ry = ir::reduce_axis(w->shape[2], "ry"),
                    rx = ir::reduce_axis(w->shape[3], "rx"), ic_inner = ir::reduce_axis(w->shape[4], "ic_inner"),
                    ic_4 = ir::reduce_axis(4, "ic_4");
  auto products = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &oc_chunk = v[1], &oc_block = v[4];
    // Flattened: v[3] is the position oh * OW + ow (and v[2] is 0).
    const ir::Expr oh = flat ? ir::floordiv(v[3], ir::Expr(out_w)) : ir::Expr(v[2]);
    const ir::Expr ow = flat ? ir::floormod(v[3], ir::Expr(out_w)) : ir::Expr(v[3]);
    const ir::Expr channel = plus(scaled(ic_inner.var, 4), ic_4.var);
    const ir::Expr xv = ir::load(padded, {n, ic_outer.var, window_index(oh, ry.var, a.conv.stride_h, a.conv.dilation_h),
                                          window_index(ow, rx.var, a.conv.stride_w, a.conv.dilation_w), channel});
    const ir::Expr wv = ir::load(w, {oc_chunk, ic_outer.var, ry.var, rx.var, ic_inner.var, oc_block, ic_4.var});
    return ir::sum(a.centered ? ir::centered_bytes_product(xv, wv) : xv * wv, {ic_outer, ry, rx, ic_inner, ic_4});
  };
  std::map<std::string, std::string> conv_attrs = a.conv.to_attrs();
  conv_attrs["ic_bn"] = std::to_string(x->shape[4]);
  conv_attrs["oc_bn"] = std::to_string(oc_bn);
  if (flat) conv_attrs["spatial"] = "flattened";
  const std::vector<std::string> axes = {"n", "oc_chunk", "oh", flat ? "ohw" : "ow", "oc_block"};
  const ir::Tensor acc = ir::compute(out, products, unique_name("qlinear_conv2d_NCHWc", {padded, w}),
                                     "qlinear_conv2d_nchwc", axes, conv_attrs);
  auto requantize = [&](const std::vector<ir::Var>& v) {
    const ir::Expr f = plus(scaled(v[1], oc_bn), v[4]);
    return requantized(ir::load(acc, to_exprs(v)) + ir::load(bias, {f}), ir::load(w_scale, {f}), a);
  };
  std::map<std::string, std::string> attrs = requantize_attrs(a);
  if (flat) attrs["spatial"] = "flattened";
  return ir::compute(out, requantize, unique_name("T_requantize", {acc}), "qlinear_conv2d_requantize",
                     {"n", "oc_chunk", "oh", flat ? "ohw" : "ow", "oc_block"}, attrs);
}

ir::Tensor qlinear_depthwise_conv2d_nchwc(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                                          const ir::Tensor& bias, const QLinearConv2dAttrs& a) {
  const Shape out = qlinear_conv2d_output_shape(x->shape, w->shape, w_scale->shape, bias->shape, a);
  const int64_t bn = x->shape[4];
  const ir::Tensor padded = pad_spatial(x, 2, 3, a.conv, "data_pad", static_cast<float>(a.x_zero_point));
  const ir::IterVar di = ir::reduce_axis(w->shape[2], "di"), dj = ir::reduce_axis(w->shape[3], "dj");
  const ir::Expr zero(int64_t{0});
  auto products = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &c_chunk = v[1], &oh = v[2], &ow = v[3], &c_block = v[4];
    return ir::sum(ir::load(padded, {n, c_chunk, window_index(oh, di.var, a.conv.stride_h, a.conv.dilation_h),
                                     window_index(ow, dj.var, a.conv.stride_w, a.conv.dilation_w), c_block}) *
                       ir::load(w, {c_chunk, zero, di.var, dj.var, zero, c_block}),
                   {di, dj});
  };
  std::map<std::string, std::string> conv_attrs = a.conv.to_attrs();
  conv_attrs["bn"] = std::to_string(bn);
  const std::vector<std::string> axes = {"n", "c_chunk", "oh", "ow", "c_block"};
  const ir::Tensor acc = ir::compute(out, products, unique_name("qlinear_depthwise_NCHWc", {padded, w}),
                                     "qlinear_depthwise_nchwc", axes, conv_attrs);
  auto requantize = [&](const std::vector<ir::Var>& v) {
    const ir::Expr f = plus(scaled(v[1], bn), v[4]);
    return requantized(ir::load(acc, to_exprs(v)) + ir::load(bias, {f}), ir::load(w_scale, {f}), a);
  };
  return ir::compute(out, requantize, unique_name("T_requantize", {acc}), "qlinear_conv2d_requantize", axes,
                     requantize_attrs(a));
}

namespace reference {

void qlinear_conv2d_nchw(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* w_scale,
                         const float* bias, const QLinearConv2dAttrs& a, float* y) {
  const Shape os = qlinear_conv2d_output_shape(xs, ws, {ws[0]}, {ws[0]}, a);
  const Requantization q = a.requantization();
  const auto [lo, hi] = q.saturation("qlinear_conv2d");
  const Conv2dAttrs& c = a.conv;
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t f = 0; f < os[1]; ++f)
      for (int64_t oy = 0; oy < os[2]; ++oy)
        for (int64_t ox = 0; ox < os[3]; ++ox) {
          int64_t acc = static_cast<int64_t>(bias[f]);
          for (int64_t ch = 0; ch < ws[1]; ++ch)
            for (int64_t ky = 0; ky < ws[2]; ++ky)
              for (int64_t kx = 0; kx < ws[3]; ++kx) {
                const int64_t iy = oy * c.stride_h + ky * c.dilation_h - c.pad_top;
                const int64_t ix = ox * c.stride_w + kx * c.dilation_w - c.pad_left;
                if (iy < 0 || iy >= xs[2] || ix < 0 || ix >= xs[3]) continue;  // x_zp - x_zp
                const int64_t channel = a.is_depthwise() ? f : ch;
                const auto q = static_cast<int64_t>(x[((n * xs[1] + channel) * xs[2] + iy) * xs[3] + ix]);
                acc += (q - a.x_zero_point) * static_cast<int64_t>(w[((f * ws[1] + ch) * ws[2] + ky) * ws[3] + kx]);
              }
          y[((n * os[1] + f) * os[2] + oy) * os[3] + ox] = requantized(acc, w_scale[f], q, lo, hi);
        }
}

namespace {

// A blocked form's reference: its data unblocked, its weight given unpacked
// (OIHW), its bias unfolded, the NCHW reference, the output blocked by `bn`.
void through_nchw(const float* x, const Shape& xs, std::vector<float> w_oihw, const Shape& oihw, const float* w_scale,
                  const float* bias, const QLinearConv2dAttrs& a, int64_t bn, float* y) {
  const std::vector<float> x_nchw = unpack_nchwc_to_nchw(x, xs);
  const Shape plain_x = {xs[0], xs[1] * xs[4], xs[2], xs[3]};
  // Centered: sum (x - 128) * max(w, -127) + bias (padding included, at the
  // zero point) is sum (x - zp) * max(w, -127) + bias + (zp - 128) * sum(max(w, -127)).
  if (a.centered)
    for (float& v : w_oihw) v = std::max(v, -127.0f);
  const std::vector<int64_t> share =
      zero_point_share(w_oihw.data(), oihw, a.centered ? a.x_zero_point - 128 : a.x_zero_point);
  std::vector<float> plain_bias(share.size());
  for (size_t f = 0; f < share.size(); ++f) plain_bias[f] = static_cast<float>(static_cast<int64_t>(bias[f]) + share[f]);
  QLinearConv2dAttrs plain = a;
  plain.conv = unblocked_attrs(a.conv);
  plain.centered = false;
  const Shape out = qlinear_conv2d_output_shape(plain_x, oihw, {oihw[0]}, {oihw[0]}, plain);
  std::vector<float> y_nchw(static_cast<size_t>(num_elements(out)));
  qlinear_conv2d_nchw(x_nchw.data(), plain_x, w_oihw.data(), oihw, w_scale, plain_bias.data(), plain, y_nchw.data());
  const std::vector<float> blocked = pack_nchw_to_nchwc(y_nchw.data(), out, bn);
  std::copy(blocked.begin(), blocked.end(), y);
}

}  // namespace

void qlinear_conv2d_nchwc(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* w_scale,
                          const float* bias, const QLinearConv2dAttrs& a, float* y) {
  const auto [ic_bn, oc_bn] = *int8_kernel_blocks(a.conv.kernel_layout);
  const Shape oihw = {ws[0] * oc_bn, ws[1] * ic_bn, ws[2], ws[3]};
  through_nchw(x, xs, unpack_int8_kernel(w, oihw, ic_bn, oc_bn), oihw, w_scale, bias, a, oc_bn, y);
}

void qlinear_depthwise_conv2d_nchwc(const float* x, const Shape& xs, const float* w, const Shape& ws,
                                    const float* w_scale, const float* bias, const QLinearConv2dAttrs& a, float* y) {
  through_nchw(x, xs, unpack_depthwise_weight(w, ws), {ws[0] * ws[5], 1, ws[2], ws[3]}, w_scale, bias, a, ws[5], y);
}

}  // namespace reference

}  // namespace tessera::ops

namespace {

// The blocked int8 convolutions of one group (not depthwise) with equal
// strides and dilations: the template qlinear_conv2d_NCHWc.x86.
std::optional<tessera::ops::TemplateCall> x86_qlinear_conv2d_template(const tessera::ops::OperatorCall& call) {
  using namespace tessera::ops;
  const auto& a = call.attrs.as<QLinearConv2dAttrs>();
  const Conv2dAttrs& c = a.conv;
  if (!a.is_blocked() || a.is_depthwise() || c.stride_h != c.stride_w || c.dilation_h != c.dilation_w)
    return std::nullopt;
  const Shape& d = call.input_shapes[0];  // (N, C/ic_bn, H, W, ic_bn)
  const Shape& w = call.input_shapes[1];  // (O/oc_bn, C/ic_bn, KH, KW, ic_bn/4, oc_bn, 4)
  if (d.size() != 5 || w.size() != 7) return std::nullopt;
  TemplateCall t{"qlinear_conv2d", {}};
  t.args.input = {d[0], d[1] * d[4], d[2], d[3]};
  t.args.weight = {w[0] * w[5], w[1] * w[4] * 4, w[2], w[3]};
  t.args.stride = c.stride_h;
  t.args.dilation = c.dilation_h;
  t.args.padding = {c.pad_top, c.pad_left, c.pad_bottom, c.pad_right};
  t.args.layout = "NCHWc";
  t.args.ic_bn = d[4];
  t.args.oc_bn = w[5];
  t.args.dtype = "int8";
  return t;
}

}  // namespace

TESSERA_OPERATOR(qlinear_conv2d) {
  using namespace tessera::ops;
  Operator op;
  op.name = "qlinear_conv2d";
  op.num_inputs = 4;  // x, w, w_scale, bias
  // Elementwise epilogues join it: a residual qlinear_add, a dequantize.
  op.pattern = FusionPattern::kAnchor;
  op.default_attrs = QLinearConv2dAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return qlinear_conv2d_output_shape(in[0], in[1], in[2], in[3], attrs.as<QLinearConv2dAttrs>());
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    const auto& a = attrs.as<QLinearConv2dAttrs>();
    return int8_anchor_dtype("qlinear_conv2d", a.x_dtype, a.y_dtype, in);
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<QLinearConv2dAttrs>();
    (!a.is_blocked()     ? reference::qlinear_conv2d_nchw
     : a.is_depthwise() ? reference::qlinear_depthwise_conv2d_nchwc
                        : reference::qlinear_conv2d_nchwc)(in[0], call.input_shapes[0], in[1], call.input_shapes[1],
                                                           in[2], in[3], a, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<QLinearConv2dAttrs>();
    return (!a.is_blocked()     ? qlinear_conv2d_nchw
            : a.is_depthwise() ? qlinear_depthwise_conv2d_nchwc
                               : qlinear_conv2d_nchwc)(in[0], in[1], in[2], in[3], a);
  };
  op.strategies = {{"llvm", x86_qlinear_conv2d_template}};
  // Layers of one shape share a task whatever their quantization.
  op.tuning_attrs = [](const Attrs& attrs) -> Attrs {
    QLinearConv2dAttrs a = attrs.as<QLinearConv2dAttrs>();
    a.x_scale = a.y_scale = 1.0f;
    a.x_zero_point = a.y_zero_point = 0;
    return a;
  };
  return op;
}
