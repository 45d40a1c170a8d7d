#include "ops/registry.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>

#include "ir/half_storage.h"
#include "ops/dense.h"
#include "ops/depthwise_nchwc.h"
#include "ops/layout.h"
#include "ops/operator.h"
#include "ops/winograd.h"
#include "ops/workloads.h"
#include "tessera/error.h"

namespace tessera::ops {

namespace {

// {top, left, bottom, right} from args.pad / args.padding.
std::array<int64_t, 4> resolve_padding(const std::string& op, const OpArgs& a) {
  if (a.padding.empty()) return {a.pad, a.pad, a.pad, a.pad};
  if (a.padding.size() == 2) return {a.padding[0], a.padding[1], a.padding[0], a.padding[1]};
  if (a.padding.size() == 4) return {a.padding[0], a.padding[1], a.padding[2], a.padding[3]};
  fail(op, "padding must have 2 values (h, w) or 4 (top, left, bottom, right), got " + shape_to_string(a.padding));
}

Conv2dAttrs conv_attrs(const std::string& op, const OpArgs& a) {
  Conv2dAttrs c = Conv2dAttrs::symmetric(a.stride, 0, a.dilation, a.groups);
  auto p = resolve_padding(op, a);
  c.pad_top = p[0], c.pad_left = p[1], c.pad_bottom = p[2], c.pad_right = p[3];
  return c;
}

Pool2dAttrs pool_attrs(const std::string& op, const OpArgs& a) {
  Pool2dAttrs p = Pool2dAttrs::symmetric(a.pool, a.stride, 0, a.count_include_pad);
  auto pad = resolve_padding(op, a);
  p.pad_top = pad[0], p.pad_left = pad[1], p.pad_bottom = pad[2], p.pad_right = pad[3];
  return p;
}

void require_layout(const std::string& op, const OpArgs& a, const std::string& layout) {
  if (a.layout != layout) fail(op, "layout must be " + layout + ", got layout=" + a.layout);
}

// args.input / args.weight of conv2d, checked as NCHW / OIHW before any conversion.
void check_conv2d_args(const OpArgs& a) {
  check_rank("conv2d", "input (N, C, H, W)", a.input, 4);
  check_rank("conv2d", "weight (O, I, KH, KW)", a.weight, 4);
  if (a.layout != "NCHW" && a.layout != "NHWC" && a.layout != "NCHWc")
    fail("conv2d", "layout must be NCHW, NHWC or NCHWc, got layout=" + a.layout);
}

Workload conv2d(const OpArgs& a) {
  check_conv2d_args(a);
  const Conv2dAttrs attrs = conv_attrs("conv2d", a);
  const Epilogue e{a.bias, a.relu};
  const Shape& x = a.input;
  const Shape& w = a.weight;
  if (a.layout == "NCHW") return conv2d_nchw_workload(x, w, attrs, e);
  if (a.layout == "NHWC") return conv2d_nhwc_workload({x[0], x[2], x[3], x[1]}, {w[2], w[3], w[1], w[0]}, attrs, e);
  // Check channels in NCHW terms first: a mismatch reads better than a packing error.
  conv2d_nchw_output_shape(x, w, attrs);
  NchwcBlocking b = nchwc_blocking(a);
  return conv2d_nchwc_workload(nchwc_shape(x, b.ic_bn), oihwio_shape(w, b.ic_bn, b.oc_bn), attrs, e);
}

// A grouped convolution: NCHW, or NCHW[x]c with blocks that divide one
// group's channels (the same kernels as conv2d's, each output chunk reading
// its group's input chunks).
Workload group_conv2d(const OpArgs& a) {
  check_conv2d_args(a);
  const Conv2dAttrs attrs = conv_attrs("group_conv2d", a);
  const Epilogue e{a.bias, a.relu};
  check_positive("group_conv2d", "groups", a.groups);
  const Shape& x = a.input;
  const Shape& w = a.weight;
  if (x[1] != w[1] * a.groups || w[0] % a.groups != 0)
    fail("group_conv2d", "weight " + shape_to_string(w) + " and input " + shape_to_string(x) + " do not form " +
                             std::to_string(a.groups) + " groups");
  if (a.layout == "NCHW") return group_conv2d_nchw_workload(x, w, attrs, e);
  require_layout("group_conv2d", a, "NCHWc");
  const NchwcBlocking b = nchwc_blocking(a);
  return conv2d_nchwc_workload(nchwc_shape(x, b.ic_bn), oihwio_shape(w, b.ic_bn, b.oc_bn), attrs, e);
}

// conv2d by Winograd: data blocked as NCHWc, the weight transformed
// (winograd_transform_weight of the NCHWc-packed weight).
// The checks both Winograd forms make of their arguments; their attributes.
Conv2dAttrs winograd_attrs(const std::string& op, const OpArgs& a) {
  check_conv2d_args(a);
  const Conv2dAttrs attrs = conv_attrs(op, a);
  conv2d_nchw_output_shape(a.input, a.weight, attrs);
  if (!winograd_applies(a.weight, attrs))
    fail(op, "needs a 3x3 kernel, stride 1 and dilation 1, got weight " + shape_to_string(a.weight) + " stride " +
                 std::to_string(a.stride) + " dilation " + std::to_string(a.dilation));
  if (!winograd_tile_supported(a.winograd_tile))
    fail(op, "winograd_tile must be 2 or 4, got " + std::to_string(a.winograd_tile));
  return attrs;
}

Workload conv2d_winograd(const OpArgs& a) {
  const Conv2dAttrs attrs = winograd_attrs("conv2d_winograd", a);
  const NchwcBlocking b = nchwc_blocking(a);
  return conv2d_winograd_nchwc_workload(nchwc_shape(a.input, b.ic_bn),
                                        winograd_weight_shape(a.weight, b.ic_bn, b.oc_bn, a.winograd_tile), attrs,
                                        a.winograd_tile, {a.bias, a.relu});
}

// conv2d by Winograd in NCHW (GPU targets), the weight transformed
// (winograd_transform_nchw_weight of the OIHW weight).
Workload conv2d_nchw_winograd(const OpArgs& a) {
  const Conv2dAttrs attrs = winograd_attrs("conv2d_nchw_winograd", a);
  return conv2d_winograd_nchw_workload(a.input, winograd_nchw_weight_shape(a.weight, a.winograd_tile), attrs,
                                       a.winograd_tile, {a.bias, a.relu});
}

// conv2d in NCHW computed as one matrix product (ops/conv2d_implicit_gemm.h):
// what a GPU network's ungrouped convolutions are in half storage on tensor
// cores' targets, and the GPU template's task of them.
Workload conv2d_nchw_implicit_gemm(const OpArgs& a) {
  const std::string op = "conv2d_nchw_implicit_gemm";
  check_conv2d_args(a);
  require_layout(op, a, "NCHW");
  if (a.weight[1] != a.input[1])
    fail(op, "ungrouped only: weight " + shape_to_string(a.weight) + " does not read every channel of input " +
                 shape_to_string(a.input));
  const Conv2dAttrs attrs = conv_attrs(op, a);
  conv2d_nchw_output_shape(a.input, a.weight, attrs);
  return conv2d_nchw_implicit_gemm_workload(a.input, a.weight, attrs, {a.bias, a.relu});
}

// conv2d in NHWC computed as one matrix product, positions x channels
// (ops/conv2d_implicit_gemm.h): input and weight given NCHW / OIHW as
// conv2d's are, the workload's data NHWC and its weight HWIO.
Workload conv2d_nhwc_implicit_gemm(const OpArgs& a) {
  const std::string op = "conv2d_nhwc_implicit_gemm";
  check_conv2d_args(a);
  if (a.weight[1] != a.input[1])
    fail(op, "ungrouped only: weight " + shape_to_string(a.weight) + " does not read every channel of input " +
                 shape_to_string(a.input));
  const Conv2dAttrs attrs = conv_attrs(op, a);
  conv2d_nchw_output_shape(a.input, a.weight, attrs);
  const Shape &x = a.input, &w = a.weight;
  return conv2d_nhwc_implicit_gemm_workload({x[0], x[2], x[3], x[1]}, {w[2], w[3], w[1], w[0]}, attrs,
                                            {a.bias, a.relu});
}

// depthwise_conv2d in NCHWc: one block for input and output channels (they are the same channels).
int64_t depthwise_nchwc_block(const OpArgs& a) {
  if (a.ic_bn && a.oc_bn && a.ic_bn != a.oc_bn)
    fail("depthwise_conv2d", "ic_bn and oc_bn must agree in layout NCHWc, got " + std::to_string(a.ic_bn) + " and " +
                                 std::to_string(a.oc_bn));
  if (a.ic_bn) return a.ic_bn;
  if (a.oc_bn) return a.oc_bn;
  return choose_channel_block(a.input[1]);
}

using Builder = std::function<Workload(const OpArgs&)>;

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"conv2d", conv2d},
      {"conv2d_winograd", conv2d_winograd},
      {"conv2d_nchw_winograd", conv2d_nchw_winograd},
      {"conv2d_nchw_implicit_gemm", conv2d_nchw_implicit_gemm},
      {"conv2d_nhwc_implicit_gemm", conv2d_nhwc_implicit_gemm},
      {"group_conv2d", group_conv2d},
      {"depthwise_conv2d",
       [](const OpArgs& a) {
         if (a.layout == "NCHWc") {
           check_rank("depthwise_conv2d", "input (N, C, H, W)", a.input, 4);
           const int64_t bn = depthwise_nchwc_block(a);
           return depthwise_conv2d_nchwc_workload(nchwc_shape(a.input, bn), depthwise_nchwc_weight_shape(a.weight, bn),
                                                  conv_attrs("depthwise_conv2d", a), {a.bias, a.relu});
         }
         if (a.layout == "NHWC") {
           // The NCHW shapes given, channels last: data (N, H, W, C), kernel (KH, KW, 1, C * multiplier).
           check_rank("depthwise_conv2d", "input (N, C, H, W)", a.input, 4);
           check_rank("depthwise_conv2d", "weight (C, multiplier, KH, KW)", a.weight, 4);
           const Shape &x = a.input, &w = a.weight;
           return depthwise_conv2d_nhwc_workload({x[0], x[2], x[3], x[1]}, {w[2], w[3], 1, w[0] * w[1]},
                                                 conv_attrs("depthwise_conv2d", a), {a.bias, a.relu});
         }
         require_layout("depthwise_conv2d", a, "NCHW");
         return depthwise_conv2d_nchw_workload(a.input, a.weight, conv_attrs("depthwise_conv2d", a), {a.bias, a.relu});
       }},
      {"dense",
       [](const OpArgs& a) {
         if (a.layout == "NCHW" || a.layout == "NK") return dense_workload(a.input, a.weight, {a.bias, a.relu});
         if (a.layout != "packed") fail("dense", "layout must be NK or packed, got layout=" + a.layout);
         if (a.input.size() != 2 || a.weight.size() != 2)
           fail("dense", "input must be (M, K) and weight (N, K), got input=" + shape_to_string(a.input) +
                             " weight=" + shape_to_string(a.weight));
         const int64_t n = a.weight[0], bn = a.oc_bn ? a.oc_bn : dense_pack_block(a.weight[0]);
         if (n % bn != 0) fail("dense", "oc_bn=" + std::to_string(bn) + " does not divide N=" + std::to_string(n));
         return dense_pack_workload(a.input, {n / bn, a.weight[1], bn}, {a.bias, a.relu});
       }},
      {"batch_matmul", [](const OpArgs& a) { return batch_matmul_workload(a.input, a.weight); }},
      {"max_pool",
       [](const OpArgs& a) {
         require_layout("max_pool", a, "NCHW");
         return max_pool2d_workload(a.input, pool_attrs("max_pool", a));
       }},
      {"avg_pool",
       [](const OpArgs& a) {
         require_layout("avg_pool", a, "NCHW");
         return avg_pool2d_workload(a.input, pool_attrs("avg_pool", a));
       }},
      {"global_avg_pool",
       [](const OpArgs& a) {
         if (a.layout == "NCHW") return global_avg_pool2d_workload(a.input);
         if (a.layout != "NCHWc") fail("global_avg_pool", "layout must be NCHW or NCHWc, got layout=" + a.layout);
         if (a.input.size() != 4) fail("global_avg_pool", "input must be NCHW, got " + shape_to_string(a.input));
         const int64_t bn = a.ic_bn ? a.ic_bn : choose_channel_block(a.input[1]);
         if (bn <= 0 || a.input[1] % bn != 0)
           fail("global_avg_pool", "ic_bn=" + std::to_string(bn) + " does not divide C=" + std::to_string(a.input[1]));
         return global_avg_pool2d_nchwc_workload({a.input[0], a.input[1] / bn, a.input[2], a.input[3], bn});
       }},
      {"softmax", [](const OpArgs& a) { return softmax_workload(a.input); }},
      {"relu", [](const OpArgs& a) { return relu_workload(a.input); }},
      {"clip", [](const OpArgs& a) { return clip_workload(a.input, a.clip_min, a.clip_max); }},
      {"add", [](const OpArgs& a) { return add_workload(a.input, a.weight.empty() ? a.input : a.weight); }},
      {"multiply", [](const OpArgs& a) { return multiply_workload(a.input, a.weight.empty() ? a.input : a.weight); }},
      {"bias_add", [](const OpArgs& a) { return bias_add_workload(a.input, a.axis); }},
  };
  return table;
}

// An elementwise operator of the registry (ops/operator.h) of one input, with
// its default attributes: `tessera op NAME --input SHAPE` declares it from its
// definition, so a new elementwise operator needs no entry here.
const Operator* registry_unary(const std::string& name) {
  if (!has_operator(name)) return nullptr;
  const Operator& op = find_operator(name);
  return op.num_inputs == 1 && op.pattern == FusionPattern::kElementwise && op.compute && op.reference ? &op : nullptr;
}

Workload registry_unary_workload(const Operator& op, const OpArgs& a) {
  check_dims_positive(op.name, "input", a.input);
  ir::Tensor data = ir::placeholder(a.input, "data");
  OperatorCall call{op.default_attrs, {a.input}, op.infer_shape({a.input}, op.default_attrs), {false}};
  Workload w;
  w.op = op.name;
  w.dag = ir::ComputeDAG({op.compute(call, {data})});
  w.reference = bind_reference(w.dag, {data}, [&op, call](const std::vector<const float*>& in, float* out) {
    op.reference(call, in, out);
  });
  return w;
}

}  // namespace

const std::vector<std::string>& op_arg_fields(const std::string& op) {
  using Fields = std::vector<std::string>;
  static const Fields kConv = {"input",  "weight", "stride", "pad",  "dilation", "padding",
                               "layout", "ic_bn",  "oc_bn",  "bias", "relu"};
  // Every op takes dtype (its arguments' storage), added below.
  static const std::map<std::string, Fields> listed = {
      {"conv2d", kConv},
      {"conv2d_winograd", {"input", "weight", "pad", "padding", "ic_bn", "oc_bn", "bias", "relu", "winograd_tile"}},
      {"conv2d_nchw_winograd", {"input", "weight", "pad", "padding", "bias", "relu", "winograd_tile"}},
      {"conv2d_nchw_implicit_gemm", {"input", "weight", "stride", "pad", "dilation", "padding", "bias", "relu"}},
      {"conv2d_nhwc_implicit_gemm", {"input", "weight", "stride", "pad", "dilation", "padding", "bias", "relu"}},
      {"depthwise_conv2d", kConv},
      {"group_conv2d", {"input", "weight", "stride", "pad", "dilation", "padding", "layout", "ic_bn", "oc_bn", "bias",
                        "relu", "groups"}},
      {"dense", {"input", "weight", "layout", "oc_bn", "bias", "relu"}},
      {"batch_matmul", {"input", "weight"}},
      {"max_pool", {"input", "pool", "stride", "pad", "padding", "layout"}},
      {"avg_pool", {"input", "pool", "stride", "pad", "padding", "layout", "count_include_pad"}},
      {"global_avg_pool", {"input", "layout", "ic_bn"}},
      {"softmax", {"input"}},
      {"relu", {"input"}},
      {"clip", {"input", "clip_min", "clip_max"}},
      {"add", {"input", "weight"}},
      {"multiply", {"input", "weight"}},
      {"bias_add", {"input", "axis"}},
      // A network's int8 convolutions (records and tasks only: their
      // quantization comes from the graph, so make_workload declares none).
      {"qlinear_conv2d", {"input", "weight", "stride", "pad", "dilation", "padding", "layout", "ic_bn", "oc_bn"}},
  };
  static const std::map<std::string, Fields> table = [] {
    std::map<std::string, Fields> t = listed;
    for (auto& [name, fields] : t) fields.push_back("dtype");
    return t;
  }();
  static const Fields kInputOnly = {"input", "dtype"};
  auto it = table.find(op);
  if (it != table.end()) return it->second;
  if (registry_unary(op)) return kInputOnly;
  throw Error("unknown op '" + op + "'");
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : builders()) names.push_back(name);
  for (const Operator* op : all_operators())
    if (!builders().count(op->name) && registry_unary(op->name)) names.push_back(op->name);
  std::sort(names.begin(), names.end());
  return names;
}

Workload make_workload(const std::string& op, const OpArgs& args) {
  auto it = builders().find(op);
  if (it == builders().end() && registry_unary(op)) {
    Workload w = registry_unary_workload(*registry_unary(op), args);
    if (args.dtype == "float16") w.dag = ir::with_half_storage(w.dag);
    return w;
  }
  if (it == builders().end()) {
    std::string valid;
    for (const auto& name : op_names()) valid += (valid.empty() ? "" : ", ") + name;
    throw Error("unknown op '" + op + "'; valid ops: " + valid);
  }
  if (args.dtype != "float32" && args.dtype != "float16")
    throw Error(op + ": dtype '" + args.dtype + "': expected float32 or float16");
  Workload w = it->second(args);
  if (args.dtype == "float16") w.dag = ir::with_half_storage(w.dag);
  return w;
}

OpArgs with_vector_blocks(const std::string& op, const OpArgs& args, int64_t vector_lanes) {
  OpArgs a = args;
  if (a.layout != "NCHWc" || a.input.size() != 4 || a.weight.empty()) return a;
  if (op == "depthwise_conv2d") {
    // One block for input and output: a block given for either is the block.
    if (!a.ic_bn && !a.oc_bn) a.ic_bn = a.oc_bn = choose_channel_block(a.input[1], vector_lanes);
  } else if (op == "conv2d" || op == "conv2d_winograd" || op == "group_conv2d") {
    // Grouped, the blocks divide one group's channels (bad groups fail in make_workload).
    const int64_t groups = std::max<int64_t>(a.groups, 1);
    if (!a.ic_bn) a.ic_bn = choose_channel_block(a.input[1] / groups, vector_lanes);
    if (!a.oc_bn) a.oc_bn = choose_channel_block(a.weight[0] / groups, vector_lanes);
  }
  return a;
}

NchwcBlocking nchwc_blocking(const OpArgs& a) {
  check_conv2d_args(a);
  NchwcBlocking b;
  // Grouped, the blocks divide one group's channels (weight[1] is a group's inputs).
  const int64_t group_outputs = a.groups > 0 ? a.weight[0] / a.groups : a.weight[0];
  b.ic_bn = a.ic_bn ? a.ic_bn : choose_channel_block(a.weight[1]);
  b.oc_bn = a.oc_bn ? a.oc_bn : choose_channel_block(group_outputs);
  // Negative or non-dividing blocks are rejected here, naming ic_bn / oc_bn.
  nchwc_shape(a.input, b.ic_bn);
  oihwio_shape(a.weight, b.ic_bn, b.oc_bn);
  if (group_outputs % b.oc_bn != 0)
    fail("group_conv2d", "oc_bn=" + std::to_string(b.oc_bn) + " does not divide the " + std::to_string(group_outputs) +
                             " output channels of a group");
  return b;
}

std::vector<float> conv2d_data_to_layout(const OpArgs& a, const float* nchw) {
  check_conv2d_args(a);
  if (a.layout == "NHWC") return nchw_to_nhwc(nchw, a.input);
  if (a.layout == "NCHWc") return pack_nchw_to_nchwc(nchw, a.input, nchwc_blocking(a).ic_bn);
  return std::vector<float>(nchw, nchw + num_elements(a.input));
}

std::vector<float> conv2d_weight_to_layout(const OpArgs& a, const float* oihw) {
  check_conv2d_args(a);
  if (a.layout == "NHWC") return oihw_to_hwio(oihw, a.weight);
  if (a.layout == "NCHWc") {
    NchwcBlocking b = nchwc_blocking(a);
    return pack_oihw_to_oihwio(oihw, a.weight, b.ic_bn, b.oc_bn);
  }
  return std::vector<float>(oihw, oihw + num_elements(a.weight));
}

std::vector<float> conv2d_output_to_nchw(const OpArgs& a, const float* output) {
  check_conv2d_args(a);
  // The weight's output channels, whatever the groups.
  Shape out = conv2d_nchw_output_shape(a.input, {a.weight[0], a.input[1], a.weight[2], a.weight[3]},
                                       conv_attrs("conv2d", a));
  if (a.layout == "NHWC") return nhwc_to_nchw(output, {out[0], out[2], out[3], out[1]});
  if (a.layout == "NCHWc") {
    int64_t oc_bn = nchwc_blocking(a).oc_bn;
    return unpack_nchwc_to_nchw(output, {out[0], out[1] / oc_bn, out[2], out[3], oc_bn});
  }
  return std::vector<float>(output, output + num_elements(out));
}

}  // namespace tessera::ops
