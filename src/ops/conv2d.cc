#include "ops/conv2d.h"

#include "ops/pad.h"

namespace tessera::ops {

Conv2dAttrs Conv2dAttrs::symmetric(int64_t stride, int64_t pad, int64_t dilation) {
  Conv2dAttrs a;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  a.dilation_h = a.dilation_w = dilation;
  return a;
}

void Conv2dAttrs::validate(const std::string& op) const {
  check_positive(op, "stride_h", stride_h);
  check_positive(op, "stride_w", stride_w);
  check_positive(op, "dilation_h", dilation_h);
  check_positive(op, "dilation_w", dilation_w);
  check_non_negative(op, "pad_top", pad_top);
  check_non_negative(op, "pad_left", pad_left);
  check_non_negative(op, "pad_bottom", pad_bottom);
  check_non_negative(op, "pad_right", pad_right);
}

std::map<std::string, std::string> Conv2dAttrs::to_attrs() const {
  auto join = [](std::initializer_list<int64_t> v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  return {{"strides", join({stride_h, stride_w})},
          {"padding", join({pad_top, pad_left, pad_bottom, pad_right})},
          {"dilation", join({dilation_h, dilation_w})}};
}

std::pair<int64_t, int64_t> spatial_output(const std::string& op, int64_t h, int64_t w, int64_t kh, int64_t kw,
                                           const Conv2dAttrs& a) {
  a.validate(op);
  return {window_output_extent(op, "height", h, a.pad_top, a.pad_bottom, kh, a.stride_h, a.dilation_h),
          window_output_extent(op, "width", w, a.pad_left, a.pad_right, kw, a.stride_w, a.dilation_w)};
}

ir::Tensor pad_spatial(const ir::Tensor& data, size_t h_dim, size_t w_dim, const Conv2dAttrs& a,
                       const std::string& name) {
  if (!a.has_padding()) return data;
  Shape before(data->shape.size(), 0), after(data->shape.size(), 0);
  before[h_dim] = a.pad_top;
  after[h_dim] = a.pad_bottom;
  before[w_dim] = a.pad_left;
  after[w_dim] = a.pad_right;
  return pad(data, before, after, 0.0f, name);
}

ir::Expr window_index(const ir::Expr& out, const ir::Expr& tap, int64_t stride, int64_t dilation) {
  return plus(scaled(out, stride), scaled(tap, dilation));
}

namespace {

void check_channels(const std::string& op, const std::string& what, int64_t data_channels,
                    int64_t weight_channels) {
  if (data_channels != weight_channels)
    fail(op, what + ": data has " + std::to_string(data_channels) + " but weight expects " +
                 std::to_string(weight_channels));
}

}  // namespace

void check_conv_operands(const std::string& op, const std::string& data_what, const Shape& data, size_t data_rank,
                         const std::string& weight_what, const Shape& weight, size_t weight_rank) {
  check_rank(op, data_what, data, data_rank);
  check_rank(op, weight_what, weight, weight_rank);
  check_dims_positive(op, "data", data);
  check_dims_positive(op, "weight", weight);
}

Shape conv2d_nchw_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs) {
  const std::string op = "conv2d_nchw";
  check_conv_operands(op, "data (N, C, H, W)", data, 4, "weight (O, I, KH, KW)", weight, 4);
  check_channels(op, "input channels", data[1], weight[1]);
  auto [oh, ow] = spatial_output(op, data[2], data[3], weight[2], weight[3], attrs);
  return {data[0], weight[0], oh, ow};
}

Shape conv2d_nhwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs) {
  const std::string op = "conv2d_nhwc";
  check_conv_operands(op, "data (N, H, W, C)", data, 4, "weight (KH, KW, I, O)", weight, 4);
  check_channels(op, "input channels", data[3], weight[2]);
  auto [oh, ow] = spatial_output(op, data[1], data[2], weight[0], weight[1], attrs);
  return {data[0], oh, ow, weight[3]};
}

Shape conv2d_nchwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs) {
  const std::string op = "conv2d_nchwc";
  check_conv_operands(op, "data (N, C/ic_bn, H, W, ic_bn)", data, 5, "weight (O/oc_bn, I/ic_bn, KH, KW, ic_bn, oc_bn)", weight, 6);
  check_channels(op, "input channel blocks", data[1], weight[1]);
  check_channels(op, "ic_bn", data[4], weight[4]);
  auto [oh, ow] = spatial_output(op, data[2], data[3], weight[2], weight[3], attrs);
  return {data[0], weight[0], oh, ow, weight[5]};
}

Shape depthwise_conv2d_nchw_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs) {
  const std::string op = "depthwise_conv2d_nchw";
  check_conv_operands(op, "data (N, C, H, W)", data, 4, "weight (C, multiplier, KH, KW)", weight, 4);
  check_channels(op, "channels", data[1], weight[0]);
  auto [oh, ow] = spatial_output(op, data[2], data[3], weight[2], weight[3], attrs);
  return {data[0], data[1] * weight[1], oh, ow};
}

Shape depthwise_conv2d_nhwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& attrs) {
  const std::string op = "depthwise_conv2d_nhwc";
  check_conv_operands(op, "data (N, H, W, C)", data, 4, "weight (KH, KW, 1, C * multiplier)", weight, 4);
  if (weight[2] != 1)
    fail(op, "weight dimension 2 (input channels per group) must be 1, got " + std::to_string(weight[2]));
  if (weight[3] % data[3] != 0)
    fail(op, "the weight's " + std::to_string(weight[3]) + " output channels are no multiple of the data's " +
                 std::to_string(data[3]) + " channels");
  auto [oh, ow] = spatial_output(op, data[1], data[2], weight[0], weight[1], attrs);
  return {data[0], oh, ow, weight[3]};
}

ir::Tensor conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  Shape out = conv2d_nchw_output_shape(data->shape, weight->shape, a);
  ir::Tensor padded = pad_spatial(data, 2, 3, a, "pad_temp");
  ir::IterVar rc = ir::reduce_axis(weight->shape[1], "rc");
  ir::IterVar ry = ir::reduce_axis(weight->shape[2], "ry");
  ir::IterVar rx = ir::reduce_axis(weight->shape[3], "rx");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &nn = v[0], &ff = v[1], &yy = v[2], &xx = v[3];
    return ir::sum(ir::load(padded, {nn, rc.var, window_index(yy, ry.var, a.stride_h, a.dilation_h),
                                     window_index(xx, rx.var, a.stride_w, a.dilation_w)}) *
                       ir::load(weight, {ff, rc.var, ry.var, rx.var}),
                   {rc, ry, rx});
  };
  return ir::compute(out, body, unique_name("conv2d_nchw", {padded, weight}), "conv2d_nchw",
                     {"nn", "ff", "yy", "xx"}, a.to_attrs());
}

ir::Tensor group_conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a, int64_t groups) {
  check_positive("group_conv2d_nchw", "groups", groups);
  const Shape& w = weight->shape;
  check_rank("group_conv2d_nchw", "weight", w, 4);
  if (w[0] % groups != 0 || data->shape.size() != 4 || data->shape[1] != w[1] * groups)
    fail("group_conv2d_nchw", "weight " + shape_to_string(w) + " and data " + shape_to_string(data->shape) +
                                  " do not form " + std::to_string(groups) + " groups");
  Shape out = conv2d_nchw_output_shape(data->shape, {w[0], data->shape[1], w[2], w[3]}, a);
  ir::Tensor padded = pad_spatial(data, 2, 3, a, "pad_temp");
  ir::IterVar rc = ir::reduce_axis(w[1], "rc");
  ir::IterVar ry = ir::reduce_axis(w[2], "ry");
  ir::IterVar rx = ir::reduce_axis(w[3], "rx");
  const int64_t out_per_group = w[0] / groups;
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &nn = v[0], &ff = v[1], &yy = v[2], &xx = v[3];
    ir::Expr channel = plus(scaled(ir::floordiv(ff, ir::Expr(out_per_group)), w[1]), rc.var);
    return ir::sum(ir::load(padded, {nn, channel, window_index(yy, ry.var, a.stride_h, a.dilation_h),
                                     window_index(xx, rx.var, a.stride_w, a.dilation_w)}) *
                       ir::load(weight, {ff, rc.var, ry.var, rx.var}),
                   {rc, ry, rx});
  };
  return ir::compute(out, body, unique_name("group_conv2d_nchw", {padded, weight}), "group_conv2d_nchw",
                     {"nn", "ff", "yy", "xx"}, a.to_attrs());
}

ir::Tensor conv2d_nhwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  Shape out = conv2d_nhwc_output_shape(data->shape, weight->shape, a);
  ir::Tensor padded = pad_spatial(data, 1, 2, a, "PaddedInput");
  ir::IterVar ry = ir::reduce_axis(weight->shape[0], "ry");
  ir::IterVar rx = ir::reduce_axis(weight->shape[1], "rx");
  ir::IterVar rc = ir::reduce_axis(weight->shape[2], "rc");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &nn = v[0], &yy = v[1], &xx = v[2], &ff = v[3];
    return ir::sum(ir::load(padded, {nn, window_index(yy, ry.var, a.stride_h, a.dilation_h),
                                     window_index(xx, rx.var, a.stride_w, a.dilation_w), rc.var}) *
                       ir::load(weight, {ry.var, rx.var, rc.var, ff}),
                   {ry, rx, rc});
  };
  return ir::compute(out, body, unique_name("Conv2dOutput", {padded, weight}), "conv2d_nhwc",
                     {"nn", "yy", "xx", "ff"}, a.to_attrs());
}

bool nchwc_flattens_spatial(const Shape& weight, const Conv2dAttrs& a) {
  return weight.size() == 6 && weight[2] == 1 && weight[3] == 1 && !a.has_padding();
}

ir::Tensor conv2d_nchwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  Shape out = conv2d_nchwc_output_shape(data->shape, weight->shape, a);
  const int64_t out_w = out[3];
  const bool flat = nchwc_flattens_spatial(weight->shape, a);
  if (flat) out = {out[0], out[1], 1, out[2] * out[3], out[4]};
  ir::Tensor padded = pad_spatial(data, 2, 3, a, "data_pad");
  // The input channel is split into two reduce axes instead of one axis with
  // div/mod, so that the inner block indexes both operands directly.
  ir::IterVar ic_outer = ir::reduce_axis(weight->shape[1], "ic_outer");
  ir::IterVar ry = ir::reduce_axis(weight->shape[2], "ry");
  ir::IterVar rx = ir::reduce_axis(weight->shape[3], "rx");
  ir::IterVar ic_inner = ir::reduce_axis(weight->shape[4], "ic_inner");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &oc_chunk = v[1], &oc_block = v[4];
    // Flattened: v[3] is the position oh * OW + ow (and v[2] is 0).
    const ir::Expr oh = flat ? ir::floordiv(v[3], ir::Expr(out_w)) : ir::Expr(v[2]);
    const ir::Expr ow = flat ? ir::floormod(v[3], ir::Expr(out_w)) : ir::Expr(v[3]);
    return ir::sum(ir::load(padded, {n, ic_outer.var, window_index(oh, ry.var, a.stride_h, a.dilation_h),
                                     window_index(ow, rx.var, a.stride_w, a.dilation_w), ic_inner.var}) *
                       ir::load(weight, {oc_chunk, ic_outer.var, ry.var, rx.var, ic_inner.var, oc_block}),
                   {ic_outer, ry, rx, ic_inner});
  };
  auto attrs = a.to_attrs();
  attrs["ic_bn"] = std::to_string(weight->shape[4]);
  attrs["oc_bn"] = std::to_string(weight->shape[5]);
  if (flat) attrs["spatial"] = "flattened";
  return ir::compute(out, body, unique_name("conv2d_NCHWc", {padded, weight}), "conv2d_nchwc",
                     {"n", "oc_chunk", "oh", flat ? "ohw" : "ow", "oc_block"}, attrs);
}

ir::Tensor depthwise_conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  Shape out = depthwise_conv2d_nchw_output_shape(data->shape, weight->shape, a);
  ir::Tensor padded = pad_spatial(data, 2, 3, a, "PaddedInput");
  const int64_t multiplier = weight->shape[1];
  ir::IterVar di = ir::reduce_axis(weight->shape[2], "di");
  ir::IterVar dj = ir::reduce_axis(weight->shape[3], "dj");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &b = v[0], &c = v[1], &i = v[2], &j = v[3];
    // Output channel c = input channel * multiplier + k; without a multiplier c is both.
    ir::Expr in_channel = multiplier == 1 ? ir::Expr(c) : ir::floordiv(c, ir::Expr(multiplier));
    ir::Expr k = multiplier == 1 ? ir::Expr(int64_t{0}) : ir::floormod(c, ir::Expr(multiplier));
    return ir::sum(ir::load(padded, {b, in_channel, window_index(i, di.var, a.stride_h, a.dilation_h),
                                     window_index(j, dj.var, a.stride_w, a.dilation_w)}) *
                       ir::load(weight, {in_channel, k, di.var, dj.var}),
                   {di, dj});
  };
  return ir::compute(out, body, unique_name("DepthwiseConv2d", {padded, weight}), "depthwise_conv2d_nchw",
                     {"b", "c", "i", "j"}, a.to_attrs());
}

ir::Tensor depthwise_conv2d_nhwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  Shape out = depthwise_conv2d_nhwc_output_shape(data->shape, weight->shape, a);
  ir::Tensor padded = pad_spatial(data, 1, 2, a, "PaddedInput");
  const int64_t multiplier = weight->shape[3] / data->shape[3];
  ir::IterVar di = ir::reduce_axis(weight->shape[0], "di");
  ir::IterVar dj = ir::reduce_axis(weight->shape[1], "dj");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &b = v[0], &i = v[1], &j = v[2], &c = v[3];
    ir::Expr in_channel = multiplier == 1 ? ir::Expr(c) : ir::floordiv(c, ir::Expr(multiplier));
    return ir::sum(ir::load(padded, {b, window_index(i, di.var, a.stride_h, a.dilation_h),
                                     window_index(j, dj.var, a.stride_w, a.dilation_w), in_channel}) *
                       ir::load(weight, {di.var, dj.var, ir::Expr(int64_t{0}), c}),
                   {di, dj});
  };
  return ir::compute(out, body, unique_name("DepthwiseConv2d", {padded, weight}), "depthwise_conv2d_nhwc",
                     {"b", "i", "j", "c"}, a.to_attrs());
}

}  // namespace tessera::ops
