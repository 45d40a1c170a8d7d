#include "ops/depthwise_nchwc.h"

#include "ops/layout.h"
#include "ops/reference.h"

namespace tessera::ops {

Shape depthwise_conv2d_nchwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& a) {
  const std::string op = "depthwise_conv2d_nchwc";
  check_conv_operands(op, "data (N, C/bn, H, W, bn)", data, 5, "weight (C/bn, 1, KH, KW, 1, bn)", weight, 6);
  if (weight[1] != 1 || weight[4] != 1)
    fail(op, "weight must be (C/bn, 1, KH, KW, 1, bn), got " + shape_to_string(weight));
  if (data[1] != weight[0] || data[4] != weight[5])
    fail(op, "data " + shape_to_string(data) + " and weight " + shape_to_string(weight) +
                 " disagree on the channel blocks");
  auto [oh, ow] = spatial_output(op, data[2], data[3], weight[2], weight[3], a);
  return {data[0], data[1], oh, ow, data[4]};
}

ir::Tensor depthwise_conv2d_nchwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  Shape out = depthwise_conv2d_nchwc_output_shape(data->shape, weight->shape, a);
  ir::Tensor padded = pad_spatial(data, 2, 3, a, "data_pad");
  ir::IterVar di = ir::reduce_axis(weight->shape[2], "di");
  ir::IterVar dj = ir::reduce_axis(weight->shape[3], "dj");
  const ir::Expr zero(int64_t{0});
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &c_chunk = v[1], &oh = v[2], &ow = v[3], &c_block = v[4];
    ir::Expr row = window_index(oh, di.var, a.stride_h, a.dilation_h);
    ir::Expr col = window_index(ow, dj.var, a.stride_w, a.dilation_w);
    return ir::sum(ir::load(padded, {n, c_chunk, row, col, c_block}) *
                       ir::load(weight, {c_chunk, zero, di.var, dj.var, zero, c_block}),
                   {di, dj});
  };
  auto attrs = a.to_attrs();
  attrs["bn"] = std::to_string(data->shape[4]);
  return ir::compute(out, body, unique_name("DepthwiseConv2d_NCHWc", {padded, weight}), "depthwise_conv2d_nchwc",
                     {"n", "c_chunk", "oh", "ow", "c_block"}, attrs);
}

Shape depthwise_nchwc_weight_shape(const Shape& w, int64_t bn) {
  const std::string op = "depthwise_conv2d";
  check_rank(op, "weight (C, multiplier, KH, KW)", w, 4);
  if (w[1] != 1) fail(op, "layout NCHWc supports channel multiplier 1 only, got weight " + shape_to_string(w));
  if (bn <= 0 || w[0] % bn != 0)
    fail(op, "block " + std::to_string(bn) + " does not divide the " + std::to_string(w[0]) + " channels");
  return {w[0] / bn, 1, w[2], w[3], 1, bn};
}

std::vector<float> pack_depthwise_weight(const float* w, const Shape& s, int64_t bn) {
  depthwise_nchwc_weight_shape(s, bn);
  const int64_t taps = s[2] * s[3];
  std::vector<float> out(num_elements(s));
  for (int64_t c = 0; c < s[0]; ++c)
    for (int64_t t = 0; t < taps; ++t) out[((c / bn) * taps + t) * bn + c % bn] = w[c * taps + t];
  return out;
}

std::vector<float> unpack_depthwise_weight(const float* packed, const Shape& ps) {
  const int64_t bn = ps[5], channels = ps[0] * bn, taps = ps[2] * ps[3];
  std::vector<float> w(static_cast<size_t>(channels * taps));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < taps; ++t) w[c * taps + t] = packed[((c / bn) * taps + t) * bn + c % bn];
  return w;
}

namespace reference {

void depthwise_conv2d_nchwc(const float* data, const Shape& ds, const float* weight, const Shape& ws,
                            const Conv2dAttrs& attrs, float* out) {
  Shape packed_out = depthwise_conv2d_nchwc_output_shape(ds, ws, attrs);
  const int64_t bn = ds[4], channels = ds[1] * bn;
  const Shape nchw{ds[0], channels, ds[2], ds[3]};
  std::vector<float> x = unpack_nchwc_to_nchw(data, ds);
  std::vector<float> w = unpack_depthwise_weight(weight, ws);
  const Shape out_nchw{ds[0], channels, packed_out[2], packed_out[3]};
  std::vector<float> y(num_elements(out_nchw));
  reference::depthwise_conv2d_nchw(x.data(), nchw, w.data(), {channels, 1, ws[2], ws[3]}, attrs, y.data());
  std::vector<float> packed = pack_nchw_to_nchwc(y.data(), out_nchw, bn);
  std::copy(packed.begin(), packed.end(), out);
}

}  // namespace reference

}  // namespace tessera::ops
