#include "ops/conv2d.h"

#include "ops/conv2d_implicit_gemm.h"
#include "ops/depthwise_nchwc.h"
#include "ops/operator.h"
#include "ops/pad.h"
#include "ops/reference.h"
#include "ops/winograd.h"
#include "tessera/error.h"
#include "ops/tensor_layout.h"

namespace tessera::ops {

Conv2dAttrs Conv2dAttrs::symmetric(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  Conv2dAttrs a;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  a.dilation_h = a.dilation_w = dilation;
  a.groups = groups;
  return a;
}

std::string Conv2dAttrs::to_string() const {
  return "strides=" + shape_to_string({stride_h, stride_w}) +
         " padding=" + shape_to_string({pad_top, pad_left, pad_bottom, pad_right}) +
         " dilation=" + shape_to_string({dilation_h, dilation_w}) + " groups=" + std::to_string(groups) +
         " data_layout=" + data_layout + " kernel_layout=" + kernel_layout +
         (winograd_tile ? " winograd_tile=" + std::to_string(winograd_tile) : "") +
         (implicit_gemm ? " implicit_gemm" : "");
}

bool is_blocked_conv(const Conv2dAttrs& a) {
  return a.data_layout.size() > 5 && a.data_layout.rfind("NCHW", 0) == 0 && a.kernel_layout.rfind("OIHW", 0) == 0 &&
         a.kernel_layout.size() > 4;
}

Conv2dAttrs unblocked_attrs(const Conv2dAttrs& a) {
  Conv2dAttrs u = a;
  u.data_layout = "NCHW";
  u.kernel_layout = "OIHW";
  return u;
}

std::string blocked_output_layout(const Conv2dAttrs& a) {
  return "NCHW" + std::to_string(Layout::parse(a.kernel_layout).block_of('O')) + "c";
}

int64_t conv2d_input_channels(const Conv2dAttrs& a, const Shape& data) {
  if (data.size() == 5) return data[1] * data[4];
  if (data.size() != 4) return 0;
  return a.data_layout == "NHWC" ? data[3] : data[1];
}

bool is_depthwise_conv2d(const Conv2dAttrs& a, const Shape& data) {
  // A single-channel input (groups 1) is an ordinary convolution.
  return a.groups > 1 && a.groups == conv2d_input_channels(a, data);
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
                       const std::string& name, float value) {
  if (!a.has_padding()) return data;
  Shape before(data->shape.size(), 0), after(data->shape.size(), 0);
  before[h_dim] = a.pad_top;
  after[h_dim] = a.pad_bottom;
  before[w_dim] = a.pad_left;
  after[w_dim] = a.pad_right;
  return pad(data, before, after, value, name);
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
  check_positive(op, "groups", attrs.groups);
  if (weight[0] % attrs.groups != 0)
    fail(op, "the weight's " + std::to_string(weight[0]) + " output channel blocks do not divide into groups=" +
                 std::to_string(attrs.groups) + " (oc_bn must divide the output channels of a group)");
  check_channels(op, "input channel blocks", data[1], weight[1] * attrs.groups);
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

ir::Tensor group_conv2d_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a) {
  const int64_t groups = a.groups;
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
  // Grouped: output chunk oc_chunk belongs to group oc_chunk / (its group's
  // chunks) and reads that group's input chunks only.
  const int64_t oc_chunks_per_group = weight->shape[0] / a.groups;
  auto input_chunk = [&](const ir::Var& oc_chunk) -> ir::Expr {
    if (a.groups == 1) return ic_outer.var;
    return plus(scaled(ir::floordiv(oc_chunk, ir::Expr(oc_chunks_per_group)), weight->shape[1]), ic_outer.var);
  };
  ir::IterVar ry = ir::reduce_axis(weight->shape[2], "ry");
  ir::IterVar rx = ir::reduce_axis(weight->shape[3], "rx");
  ir::IterVar ic_inner = ir::reduce_axis(weight->shape[4], "ic_inner");
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &oc_chunk = v[1], &oc_block = v[4];
    // Flattened: v[3] is the position oh * OW + ow (and v[2] is 0).
    const ir::Expr oh = flat ? ir::floordiv(v[3], ir::Expr(out_w)) : ir::Expr(v[2]);
    const ir::Expr ow = flat ? ir::floormod(v[3], ir::Expr(out_w)) : ir::Expr(v[3]);
    return ir::sum(ir::load(padded, {n, input_chunk(oc_chunk), window_index(oh, ry.var, a.stride_h, a.dilation_h),
                                     window_index(ow, rx.var, a.stride_w, a.dilation_w), ic_inner.var}) *
                       ir::load(weight, {oc_chunk, ic_outer.var, ry.var, rx.var, ic_inner.var, oc_block}),
                   {ic_outer, ry, rx, ic_inner});
  };
  auto attrs = a.to_attrs();
  attrs["ic_bn"] = std::to_string(weight->shape[4]);
  attrs["oc_bn"] = std::to_string(weight->shape[5]);
  if (a.groups != 1) attrs["groups"] = std::to_string(a.groups);
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


namespace tessera::ops {
// ---------------------------------------------------------------------------
// The conv2d operator.

namespace {

// The output shape of conv2d in NCHW / OIHW or NHWC / HWIO; a blocked
// convolution is the same convolution in NCHW / OIHW, its output blocked.
Shape conv2d_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& a) {
  if (is_blocked_conv(a)) {
    const Shape out =
        conv2d_shape(layout_transform_shape(data, Layout::parse(a.data_layout), Layout::parse("NCHW")),
                     layout_transform_shape(weight, Layout::parse(a.kernel_layout), Layout::parse("OIHW")),
                     unblocked_attrs(a));
    return layout_transform_shape(out, Layout::parse("NCHW"), Layout::parse(blocked_output_layout(a)));
  }
  const bool nchw = a.data_layout == "NCHW" && a.kernel_layout == "OIHW";
  const bool nhwc = a.data_layout == "NHWC" && a.kernel_layout == "HWIO";
  if (!nchw && !nhwc)
    shape_error("data_layout " + a.data_layout + " with kernel_layout " + a.kernel_layout +
                " is not supported (NCHW with OIHW, or NHWC with HWIO)");
  require_rank("data (" + a.data_layout + ")", data, 4);
  require_rank("weight (" + a.kernel_layout + ")", weight, 4);
  for (int64_t d : data)
    if (d <= 0) shape_error("data " + shape_to_string(data) + " has a non-positive dimension");
  for (int64_t d : weight)
    if (d <= 0) shape_error("weight " + shape_to_string(weight) + " has a non-positive dimension");
  require_positive("groups", a.groups);
  require_positive("stride_h", a.stride_h);
  require_positive("stride_w", a.stride_w);
  require_positive("dilation_h", a.dilation_h);
  require_positive("dilation_w", a.dilation_w);
  require_non_negative("pad_top", a.pad_top);
  require_non_negative("pad_left", a.pad_left);
  require_non_negative("pad_bottom", a.pad_bottom);
  require_non_negative("pad_right", a.pad_right);
  const SpatialAxes ax = spatial_axes(a.data_layout);
  const int64_t n = data[0], c = data[ax.c], h = data[ax.h], w = data[ax.w];
  const int64_t o = nchw ? weight[0] : weight[3], i = nchw ? weight[1] : weight[2];
  const int64_t kh = nchw ? weight[2] : weight[0], kw = nchw ? weight[3] : weight[1];
  auto str = [](int64_t v) { return std::to_string(v); };
  if (c % a.groups != 0)
    shape_error("data " + shape_to_string(data) + " has " + str(c) + " channels, not a multiple of groups=" +
                str(a.groups));
  if (o % a.groups != 0)
    shape_error("weight " + shape_to_string(weight) + " has " + str(o) +
                " output channels, not a multiple of groups=" + str(a.groups));
  if (i * a.groups != c) {
    const std::string per_group = a.groups == 1 ? "" : " (" + str(i) + " per group, groups=" + str(a.groups) + ")";
    shape_error("weight " + shape_to_string(weight) + " expects " + str(i * a.groups) + " input channels" +
                per_group + ", data " + shape_to_string(data) + " has " + str(c));
  }
  const int64_t oh = window_output_extent("conv2d", "height", h, a.pad_top, a.pad_bottom, kh, a.stride_h, a.dilation_h);
  const int64_t ow = window_output_extent("conv2d", "width", w, a.pad_left, a.pad_right, kw, a.stride_w, a.dilation_w);
  return nchw ? Shape{n, o, oh, ow} : Shape{n, oh, ow, o};
}

// Reference of a blocked convolution: unpacked to NCHW / OIHW, computed
// there, packed back.
void reference_blocked_conv2d(const Conv2dAttrs& a, const float* data, const Shape& data_shape, const float* weight,
                              const Shape& weight_shape, const Shape& out_shape, float* y) {
  const Layout nchw = Layout::parse("NCHW"), oihw = Layout::parse("OIHW");
  const Layout data_layout = Layout::parse(a.data_layout), kernel_layout = Layout::parse(a.kernel_layout);
  const Layout out_layout = Layout::parse(blocked_output_layout(a));
  const Shape xs = layout_transform_shape(data_shape, data_layout, nchw);
  std::vector<float> x(static_cast<size_t>(num_elements(xs)));
  layout_transform(data, data_shape, data_layout, nchw, x.data());
  const Shape ws = layout_transform_shape(weight_shape, kernel_layout, oihw);
  std::vector<float> w(static_cast<size_t>(num_elements(ws)));
  layout_transform(weight, weight_shape, kernel_layout, oihw, w.data());
  const Shape os = layout_transform_shape(out_shape, out_layout, nchw);
  std::vector<float> out(static_cast<size_t>(num_elements(os)));
  reference::conv2d_grouped_nchw(x.data(), xs, w.data(), ws, a, a.groups, out.data());
  layout_transform(out.data(), os, nchw, out_layout, y);
}

bool is_winograd_weight(const Conv2dAttrs& a, size_t input) { return input == 1 && a.winograd_tile > 0; }
// (In NHWC the implicit GEMM reads the HWIO weight as it is.)
bool is_implicit_gemm_weight(const Conv2dAttrs& a, size_t input) {
  return input == 1 && a.implicit_gemm && a.data_layout == "NCHW";
}

// A convolution's weight where its kernel reads it in another form: a
// Winograd convolution's, OIHW<i>i<o>o (CPUs) or OIHW (GPUs) in the graph,
// transformed; an implicit GEMM's, OIHW in the graph, OHWI
// (ops/conv2d_implicit_gemm.h).
StoredConstant stored_weight() {
  StoredConstant s;
  s.shape = [](const OperatorCall& call, size_t input, const Shape& shape) {
    const auto& a = call.attrs.as<Conv2dAttrs>();
    if (is_implicit_gemm_weight(a, input)) return implicit_gemm_weight_shape(shape);
    if (!is_winograd_weight(a, input)) return shape;
    if (a.data_layout == "NCHW") return winograd_nchw_weight_shape(shape, a.winograd_tile);  // OIHW
    const int64_t ib = shape.at(4), ob = shape.at(5);  // (O/ob, I/ib, 3, 3, ib, ob)
    return winograd_weight_shape({shape[0] * ob, shape[1] * ib, shape[2], shape[3]}, ib, ob, a.winograd_tile);
  };
  s.values = [](const OperatorCall& call, size_t input, const float* value, const Shape& shape) {
    const auto& a = call.attrs.as<Conv2dAttrs>();
    if (is_implicit_gemm_weight(a, input)) return implicit_gemm_weight(value, shape);
    if (!is_winograd_weight(a, input)) return std::vector<float>(value, value + num_elements(shape));
    if (a.data_layout == "NCHW") return winograd_transform_nchw_weight(value, shape, a.winograd_tile);
    return winograd_transform_weight(value, shape, a.winograd_tile);
  };
  return s;
}

// conv2d and depthwise convolutions in NCHW<b>c with equal strides and
// dilations on both axes: the x86 templates (conv2d_NCHWc, its 1x1 and
// Winograd variants, depthwise_conv2d_NCHWc).
std::optional<TemplateCall> x86_conv2d_template(const OperatorCall& call) {
  const auto& a = call.attrs.as<Conv2dAttrs>();
  if (!is_blocked_conv(a) || a.stride_h != a.stride_w || a.dilation_h != a.dilation_w) return std::nullopt;
  const Shape& d = call.input_shapes[0];  // (N, C/b, H, W, b)
  const Shape& w = call.input_shapes[1];  // (O/o, I/i, KH, KW, i, o)
  if (d.size() != 5 || w.size() != 6) return std::nullopt;
  const bool depthwise = is_depthwise_conv2d(a, d);
  const bool grouped = !depthwise && a.groups != 1;
  TemplateCall t;
  t.op = depthwise ? "depthwise_conv2d" : grouped ? "group_conv2d" : a.winograd_tile > 0 ? "conv2d_winograd" : "conv2d";
  if (grouped) t.args.groups = a.groups;
  t.args.winograd_tile = a.winograd_tile > 0 ? a.winograd_tile : t.args.winograd_tile;
  t.args.input = {d[0], d[1] * d[4], d[2], d[3]};
  t.args.weight = depthwise ? Shape{w[0] * w[5], 1, w[2], w[3]} : Shape{w[0] * w[5], w[1] * w[4], w[2], w[3]};
  t.args.stride = a.stride_h;
  t.args.dilation = a.dilation_h;
  t.args.padding = {a.pad_top, a.pad_left, a.pad_bottom, a.pad_right};
  t.args.layout = "NCHWc";
  t.args.ic_bn = d[4];
  t.args.oc_bn = w[5];
  return t;
}

// A GPU target's convolutions in NCHW: the direct, Winograd or
// matrix-product (implicit GEMM) template tunes the ungrouped ones, the
// depthwise template those of one output per channel, with square strides
// and dilations. In NHWC, the matrix-product template the ungrouped ones
// (its arguments in NCHW / OIHW terms, as the registry takes them).
std::optional<TemplateCall> gpu_conv2d_template(const OperatorCall& call) {
  const auto& a = call.attrs.as<Conv2dAttrs>();
  if (a.stride_h != a.stride_w || a.dilation_h != a.dilation_w) return std::nullopt;
  if (a.data_layout == "NHWC" && a.implicit_gemm) {
    const Shape& d = call.input_shapes[0];  // (N, H, W, C)
    const Shape& w = call.input_shapes[1];  // (KH, KW, C, F)
    if (d.size() != 4 || w.size() != 4 || a.groups != 1) return std::nullopt;
    TemplateCall t;
    t.op = "conv2d_nhwc_implicit_gemm";
    t.args.input = {d[0], d[3], d[1], d[2]};
    t.args.weight = {w[3], w[2], w[0], w[1]};
    t.args.stride = a.stride_h;
    t.args.dilation = a.dilation_h;
    t.args.padding = {a.pad_top, a.pad_left, a.pad_bottom, a.pad_right};
    t.args.layout = "NHWC";
    return t;
  }
  if (a.data_layout != "NCHW") return std::nullopt;
  const Shape& d = call.input_shapes[0];  // (N, C, H, W)
  const Shape& w = call.input_shapes[1];  // (O, C/groups, KH, KW)
  if (d.size() != 4 || w.size() != 4) return std::nullopt;
  const bool depthwise = a.groups == d[1] && w[0] == d[1] && w[1] == 1;
  if (!depthwise && (a.groups != 1 || w[1] != d[1])) return std::nullopt;
  TemplateCall t;
  t.op = depthwise ? "depthwise_conv2d"
         : a.implicit_gemm ? "conv2d_nchw_implicit_gemm"
         : a.winograd_tile > 0 ? "conv2d_nchw_winograd"
                               : "conv2d";
  if (a.winograd_tile > 0) t.args.winograd_tile = a.winograd_tile;
  t.args.input = d;
  t.args.weight = w;
  t.args.stride = a.stride_h;
  t.args.dilation = a.dilation_h;
  t.args.padding = {a.pad_top, a.pad_left, a.pad_bottom, a.pad_right};
  t.args.layout = "NCHW";
  return t;
}

}  // namespace

}  // namespace tessera::ops

TESSERA_OPERATOR(conv2d) {
  using namespace tessera::ops;
  Operator op;
  op.name = "conv2d";
  op.num_inputs = 2;
  op.pattern = FusionPattern::kAnchor;
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return conv2d_shape(in[0], in[1], attrs.as<Conv2dAttrs>());
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<Conv2dAttrs>();
    const Shape &xs = call.input_shapes[0], &ws = call.input_shapes[1];
    if (is_blocked_conv(a)) return reference_blocked_conv2d(a, in[0], xs, in[1], ws, call.output_shape, y);
    if (a.data_layout == "NHWC") return reference::conv2d_grouped_nhwc(in[0], xs, in[1], ws, a, a.groups, y);
    reference::conv2d_grouped_nchw(in[0], xs, in[1], ws, a, a.groups, y);
  };
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    const auto& a = call.attrs.as<Conv2dAttrs>();
    const bool depthwise = is_depthwise_conv2d(a, call.input_shapes[0]);
    if (a.groups != 1 && !depthwise && !is_blocked_conv(a)) {
      if (a.data_layout != "NCHW")
        throw tessera::Error("a grouped convolution in " + a.data_layout + " is not supported by the build yet");
      return group_conv2d_nchw(in[0], in[1], a);
    }
    if (a.data_layout == "NCHW" && depthwise) return depthwise_conv2d_nchw(in[0], in[1], a);
    if (a.data_layout == "NCHW" && a.winograd_tile > 0)
      return conv2d_winograd_nchw(in[0], in[1], a, a.winograd_tile);  // weight stored transformed
    if (a.data_layout == "NCHW" && a.implicit_gemm) {
      // Its weight is stored OHWI, which only a constant can be (graph::choose_implicit_gemm).
      if (call.constant_inputs.size() < 2 || !call.constant_inputs[1])
        throw tessera::Error(
            "an implicit GEMM convolution reads its weight stored OHWI: the weight must be a constant");
      return conv2d_nchw_implicit_gemm(in[0], in[1], a);
    }
    if (a.data_layout == "NCHW") return conv2d_nchw(in[0], in[1], a);
    if (a.data_layout == "NHWC" && a.implicit_gemm && !depthwise) return conv2d_nhwc_implicit_gemm(in[0], in[1], a);
    if (a.data_layout == "NHWC") return depthwise ? depthwise_conv2d_nhwc(in[0], in[1], a) : conv2d_nhwc(in[0], in[1], a);
    if (depthwise) return depthwise_conv2d_nchwc(in[0], in[1], a);
    if (a.winograd_tile > 0) return conv2d_winograd_nchwc(in[0], in[1], a, a.winograd_tile);  // weight stored transformed
    return conv2d_nchwc(in[0], in[1], a);
  };
  op.stored_constant = stored_weight();
  op.strategies = {{"llvm", x86_conv2d_template}, {"cuda", gpu_conv2d_template}, {"opencl", gpu_conv2d_template}};
  return op;
}
