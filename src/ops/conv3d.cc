// conv3d (video networks: R3D, MC3, R(2+1)D; ONNX Conv with 5-D weights,
// torch.nn.Conv3d): NCDHW data, OIDHW weights, groups, strides, dilations
// and padding per axis. A direct declaration with the generic schedule:
// correct everywhere, not yet tuned (no template, no blocked layout).
#include "ops/conv3d.h"

#include "ops/operator.h"

namespace tessera::ops {

std::string Conv3dAttrs::to_string() const {
  return "strides=" + shape_to_string({strides[0], strides[1], strides[2]}) +
         " pads=" + shape_to_string({pads[0], pads[1], pads[2], pads[3], pads[4], pads[5]}) +
         " dilations=" + shape_to_string({dilations[0], dilations[1], dilations[2]}) +
         " groups=" + std::to_string(groups);
}

namespace {

Shape conv3d_shape(const Shape& x, const Shape& w, const Conv3dAttrs& a) {
  if (x.size() != 5) shape_error("data must be (N, C, D, H, W), got " + shape_to_string(x));
  if (w.size() != 5) shape_error("weight must be (O, I, KD, KH, KW), got " + shape_to_string(w));
  if (a.groups < 1 || x[1] % a.groups != 0 || w[0] % a.groups != 0 || w[1] * a.groups != x[1])
    shape_error("weight " + shape_to_string(w) + " with " + std::to_string(a.groups) + " groups does not fit the " +
                std::to_string(x[1]) + " input channels of data " + shape_to_string(x));
  Shape out{x[0], w[0], 0, 0, 0};
  for (int d = 0; d < 3; ++d) {
    if (a.strides[d] < 1 || a.dilations[d] < 1 || a.pads[d] < 0 || a.pads[d + 3] < 0)
      shape_error("strides and dilations must be positive, pads not negative: " + a.to_string());
    const int64_t window = a.dilations[d] * (w[2 + d] - 1) + 1;
    const int64_t padded = x[2 + d] + a.pads[d] + a.pads[d + 3];
    if (window > padded)
      shape_error("the kernel spans " + std::to_string(window) + " along axis " + std::to_string(2 + d) +
                  ", more than the padded " + std::to_string(padded));
    out[2 + d] = (padded - window) / a.strides[d] + 1;
  }
  return out;
}

void reference_conv3d(const OperatorCall& call, const std::vector<const float*>& in, float* y) {
  const auto& a = call.attrs.as<Conv3dAttrs>();
  const Shape &xs = call.input_shapes[0], &ws = call.input_shapes[1], &os = call.output_shape;
  const int64_t per_group_in = ws[1], per_group_out = ws[0] / a.groups;
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t o = 0; o < os[1]; ++o) {
      const int64_t g = o / per_group_out;
      for (int64_t od = 0; od < os[2]; ++od)
        for (int64_t oh = 0; oh < os[3]; ++oh)
          for (int64_t ow = 0; ow < os[4]; ++ow) {
            double sum = 0;
            for (int64_t i = 0; i < per_group_in; ++i)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    const int64_t id = od * a.strides[0] - a.pads[0] + kd * a.dilations[0];
                    const int64_t ih = oh * a.strides[1] - a.pads[1] + kh * a.dilations[1];
                    const int64_t iw = ow * a.strides[2] - a.pads[2] + kw * a.dilations[2];
                    if (id < 0 || id >= xs[2] || ih < 0 || ih >= xs[3] || iw < 0 || iw >= xs[4]) continue;
                    const int64_t c = g * per_group_in + i;
                    sum += static_cast<double>(in[0][(((n * xs[1] + c) * xs[2] + id) * xs[3] + ih) * xs[4] + iw]) *
                           in[1][(((o * ws[1] + i) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw];
                  }
            y[(((n * os[1] + o) * os[2] + od) * os[3] + oh) * os[4] + ow] = static_cast<float>(sum);
          }
    }
}

// The data padded with zeros (a stage of its own, so the reduction reads in
// bounds), then the sum over input channels of the group and the window.
ir::Tensor conv3d(const ir::Tensor& x, const ir::Tensor& w, const Conv3dAttrs& a, const Shape& out) {
  const Shape& xs = x->shape;
  const Shape& ws = w->shape;
  const Shape padded{xs[0], xs[1], xs[2] + a.pads[0] + a.pads[3], xs[3] + a.pads[1] + a.pads[4],
                     xs[4] + a.pads[2] + a.pads[5]};
  ir::Tensor data = x;
  if (padded != xs) {
    data = ir::compute(
        padded,
        [&](const std::vector<ir::Var>& v) {
          ir::Expr inside = ir::make_bool(true);
          std::vector<ir::Expr> idx{v[0], v[1]};
          for (int d = 0; d < 3; ++d) {
            const ir::Expr at = ir::Expr(v[2 + d]) - ir::make_int(a.pads[d]);
            inside = inside && at >= ir::make_int(0) && at < ir::make_int(xs[2 + d]);
            idx.push_back(ir::min(ir::max(at, ir::make_int(0)), ir::make_int(xs[2 + d] - 1)));
          }
          return ir::select(inside, ir::load(x, idx), ir::make_float(0.0));
        },
        unique_name("T_pad3d", {x}), "injective", ax_names(5));
  }
  const int64_t per_group_out = ws[0] / a.groups;
  ir::IterVar ic = ir::reduce_axis(ws[1], "ic"), kd = ir::reduce_axis(ws[2], "kd"), kh = ir::reduce_axis(ws[3], "kh"),
              kw = ir::reduce_axis(ws[4], "kw");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Expr channel = ir::floordiv(ir::Expr(v[1]), ir::make_int(per_group_out)) * ir::make_int(ws[1]) + ic.var;
    const ir::Expr value =
        ir::load(data, {v[0], channel, ir::Expr(v[2]) * ir::make_int(a.strides[0]) + kd.var * ir::make_int(a.dilations[0]),
                        ir::Expr(v[3]) * ir::make_int(a.strides[1]) + kh.var * ir::make_int(a.dilations[1]),
                        ir::Expr(v[4]) * ir::make_int(a.strides[2]) + kw.var * ir::make_int(a.dilations[2])}) *
        ir::load(w, {v[1], ic.var, kd.var, kh.var, kw.var});
    return ir::sum(value, {ic, kd, kh, kw});
  };
  return ir::compute(out, body, unique_name("T_conv3d", {data, w}), "conv3d", ax_names(5));
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(conv3d) {
  using namespace tessera::ops;
  Operator op;
  op.name = "conv3d";  // inputs: data, weight
  op.num_inputs = 2;
  op.default_attrs = Conv3dAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return conv3d_shape(in[0], in[1], attrs.as<Conv3dAttrs>());
  };
  op.reference = reference_conv3d;
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return conv3d(in[0], in[1], call.attrs.as<Conv3dAttrs>(), call.output_shape);
  };
  return op;
}
