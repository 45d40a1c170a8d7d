#include "ops/qlinear_conv2d.h"

#include <algorithm>
#include <cmath>

#include "ops/operator.h"
#include "ops/quantize.h"

namespace tessera::ops {

std::string QLinearConv2dAttrs::to_string() const {
  return conv.to_string() + " x_scale=" + number_to_string(x_scale) + " x_zero_point=" + std::to_string(x_zero_point) +
         " x_dtype=" + x_dtype + " y_scale=" + number_to_string(y_scale) +
         " y_zero_point=" + std::to_string(y_zero_point) + " y_dtype=" + y_dtype + (relu ? " relu" : "");
}

void QLinearConv2dAttrs::validate() const {
  const std::string op = "qlinear_conv2d";
  conv.validate(op);
  if (conv.data_layout != "NCHW" || conv.kernel_layout != "OIHW" || conv.groups != 1)
    fail(op, "computes NCHW data with an OIHW weight in one group, got " + conv.to_string());
  QuantizeAttrs{x_scale, x_zero_point, x_dtype}.validate(op + " input");
  QuantizeAttrs{y_scale, y_zero_point, y_dtype}.validate(op + " output");
}

Shape qlinear_conv2d_output_shape(const Shape& x, const Shape& w, const Shape& w_scale, const Shape& bias,
                                  const QLinearConv2dAttrs& a) {
  const std::string op = "qlinear_conv2d";
  a.validate();
  const Shape out = conv2d_nchw_output_shape(x, w, a.conv);
  if (w_scale != Shape{w[0]}) fail(op, "w_scale must be (" + std::to_string(w[0]) + "), got " + shape_to_string(w_scale));
  if (bias != Shape{w[0]}) fail(op, "bias must be (" + std::to_string(w[0]) + "), got " + shape_to_string(bias));
  return out;
}

namespace {

// The output's range: its type's, from y_zero_point up with a fused ReLU.
std::pair<float, float> saturation(const QLinearConv2dAttrs& a) {
  const ir::DType t = quantized_type("qlinear_conv2d", a.y_dtype);
  const int64_t lo = a.relu ? std::max(a.y_zero_point, quantized_min(t)) : quantized_min(t);
  return {static_cast<float>(lo), static_cast<float>(quantized_max(t))};
}

// The requantization of one accumulator, in the order the kernel computes it.
float requantized(int64_t acc, float x_scale, float w_scale, float y_scale, float y_zero_point, float lo, float hi) {
  const float multiplier = x_scale * w_scale / y_scale;
  const float rounded = std::nearbyint(static_cast<float>(static_cast<int32_t>(acc)) * multiplier);
  return std::min(std::max(rounded + y_zero_point, lo), hi);
}

}  // namespace

ir::Tensor qlinear_conv2d_nchw(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& w_scale,
                               const ir::Tensor& bias, const QLinearConv2dAttrs& a) {
  const Shape out = qlinear_conv2d_output_shape(x->shape, w->shape, w_scale->shape, bias->shape, a);
  const ir::DType y_type = quantized_type("qlinear_conv2d", a.y_dtype);
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
    return ir::sum(ir::load(padded, {nn, rc.var, window_index(yy, ry.var, a.conv.stride_h, a.conv.dilation_h),
                                     window_index(xx, rx.var, a.conv.stride_w, a.conv.dilation_w)}) *
                       ir::load(w, {ff, rc.var, ry.var, rx.var}),
                   {rc, ry, rx});
  };
  const ir::Tensor acc = ir::compute(out, products, unique_name("qlinear_conv2d_nchw", {padded, w}),
                                     "qlinear_conv2d_nchw", {"nn", "ff", "yy", "xx"}, a.conv.to_attrs());

  const auto [lo, hi] = saturation(a);
  auto requantize = [&](const std::vector<ir::Var>& v) {
    const ir::Var& f = v[1];
    const ir::Expr total = ir::load(acc, to_exprs(v)) - ir::load(weight_sum, {f}) * ir::Expr(a.x_zero_point) +
                           ir::load(bias, {f});
    const ir::Expr multiplier = ir::Expr(a.x_scale) * ir::load(w_scale, {f}) / ir::Expr(a.y_scale);
    const ir::Expr rounded = ir::call("round", {ir::cast(ir::DType::Float32, total) * multiplier});
    const ir::Expr saturated = ir::min(ir::max(rounded + ir::Expr(static_cast<float>(a.y_zero_point)), ir::Expr(lo)),
                                       ir::Expr(hi));
    return ir::cast(y_type, saturated);
  };
  std::map<std::string, std::string> attrs = a.conv.to_attrs();
  attrs["quantization"] = QuantizeAttrs{a.x_scale, a.x_zero_point, a.x_dtype}.to_string() + " -> " +
                          QuantizeAttrs{a.y_scale, a.y_zero_point, a.y_dtype}.to_string() + (a.relu ? " relu" : "");
  return ir::compute(out, requantize, unique_name("T_requantize", {acc}), "qlinear_conv2d_requantize",
                     {"n", "f", "y", "x"}, attrs);
}

namespace reference {

void qlinear_conv2d_nchw(const float* x, const Shape& xs, const float* w, const Shape& ws, const float* w_scale,
                         const float* bias, const QLinearConv2dAttrs& a, float* y) {
  const Shape os = qlinear_conv2d_output_shape(xs, ws, {ws[0]}, {ws[0]}, a);
  const auto [lo, hi] = saturation(a);
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
                const auto q = static_cast<int64_t>(x[((n * xs[1] + ch) * xs[2] + iy) * xs[3] + ix]);
                acc += (q - a.x_zero_point) * static_cast<int64_t>(w[((f * ws[1] + ch) * ws[2] + ky) * ws[3] + kx]);
              }
          y[((n * os[1] + f) * os[2] + oy) * os[3] + ox] =
              requantized(acc, a.x_scale, w_scale[f], a.y_scale, static_cast<float>(a.y_zero_point), lo, hi);
        }
}

}  // namespace reference

}  // namespace tessera::ops

TESSERA_OPERATOR(qlinear_conv2d) {
  using namespace tessera::ops;
  Operator op;
  op.name = "qlinear_conv2d";
  op.num_inputs = 4;  // x, w, w_scale, bias
  op.pattern = FusionPattern::kOpaque;
  op.default_attrs = QLinearConv2dAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return qlinear_conv2d_output_shape(in[0], in[1], in[2], in[3], attrs.as<QLinearConv2dAttrs>());
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    using tessera::ir::DType;
    const auto& a = attrs.as<QLinearConv2dAttrs>();
    const DType want[] = {quantized_type("qlinear_conv2d", a.x_dtype), DType::Int8, DType::Float32, DType::Int32};
    const char* what[] = {"x", "w", "w_scale", "bias"};
    for (size_t i = 0; i < 4; ++i)
      if (in[i] != want[i])
        fail("qlinear_conv2d", std::string(what[i]) + " is " + tessera::ir::to_string(in[i]) + ", expected " +
                                   tessera::ir::to_string(want[i]));
    return quantized_type("qlinear_conv2d", a.y_dtype);
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    reference::qlinear_conv2d_nchw(in[0], call.input_shapes[0], in[1], call.input_shapes[1], in[2], in[3],
                                   call.attrs.as<QLinearConv2dAttrs>(), y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return qlinear_conv2d_nchw(in[0], in[1], in[2], in[3], call.attrs.as<QLinearConv2dAttrs>());
  };
  return op;
}
