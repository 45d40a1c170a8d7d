#include "onednn_workload.h"

#include "runtime/ndarray.h"
#include "tessera/error.h"

namespace tessera::baseline {

namespace {

// Same convention as ops::OpArgs: `padding` overrides `pad` with {h, w} or
// {top, left, bottom, right}.
void set_padding(Conv2dParams& p, const ops::OpArgs& a) {
  if (a.padding.empty()) return p.set_padding(a.pad);
  if (a.padding.size() == 2) {
    p.pad_top = p.pad_bottom = a.padding[0];
    p.pad_left = p.pad_right = a.padding[1];
    return;
  }
  if (a.padding.size() != 4) throw Error("oneDNN conv2d: padding must have 2 or 4 values");
  p.pad_top = a.padding[0], p.pad_left = a.padding[1];
  p.pad_bottom = a.padding[2], p.pad_right = a.padding[3];
}

runtime::NDArray random_array(std::vector<int64_t> shape, uint64_t seed) {
  runtime::NDArray a(std::move(shape));
  a.fill_random(seed);
  return a;
}

void check_rank(const std::string& op, const char* what, const ops::Shape& shape, size_t rank) {
  if (shape.size() != rank)
    throw Error("oneDNN " + op + ": " + what + " must have rank " + std::to_string(rank) +
                ", got " + ops::shape_to_string(shape));
}

}  // namespace

void match_target_isa(const target::Target& target) {
  if (target.isa != target::Target::host().isa) set_max_isa(target.isa);
}

bool has_onednn_counterpart(const std::string& op) {
  return op == "conv2d" || op == "group_conv2d" || op == "dense" || op == "softmax";
}

OneDnnLayer make_onednn_layer(const std::string& op, const ops::OpArgs& args) {
  if (op == "conv2d" || op == "group_conv2d") {
    check_rank(op, "input (N, C, H, W)", args.input, 4);
    check_rank(op, "weight (O, I, KH, KW)", args.weight, 4);
    Conv2dParams p;
    p.batch = args.input[0], p.in_channels = args.input[1];
    p.height = args.input[2], p.width = args.input[3];
    p.out_channels = args.weight[0], p.kernel_h = args.weight[2], p.kernel_w = args.weight[3];
    p.groups = op == "group_conv2d" ? args.groups : 1;
    if (args.weight[1] * p.groups != p.in_channels)
      throw Error("oneDNN conv2d: weight has " + std::to_string(args.weight[1]) + " input channels" +
                  (p.groups > 1 ? " per group (groups=" + std::to_string(p.groups) + ")" : "") + ", input has " +
                  std::to_string(p.in_channels));
    p.stride_h = p.stride_w = args.stride;
    p.dilation_h = p.dilation_w = args.dilation;
    set_padding(p, args);
    p.bias = args.bias, p.relu = args.relu;
    auto input = random_array(args.input, 1), weight = random_array(args.weight, 2);
    auto bias = random_array({p.out_channels}, 3);
    return OneDnnConv2d(p, input.data(), weight.data(), p.bias ? bias.data() : nullptr);
  }
  if (op == "dense") {
    check_rank(op, "input (M, K)", args.input, 2);
    check_rank(op, "weight (N, K)", args.weight, 2);
    if (args.weight[1] != args.input[1])
      throw Error("oneDNN dense: input " + ops::shape_to_string(args.input) + " and weight " +
                  ops::shape_to_string(args.weight) + " disagree on K");
    DenseParams p;
    p.batch = args.input[0], p.in_features = args.input[1], p.out_features = args.weight[0];
    p.bias = args.bias, p.relu = args.relu;
    auto input = random_array(args.input, 1), weight = random_array(args.weight, 2);
    auto bias = random_array({p.out_features}, 3);
    return OneDnnDense(p, input.data(), weight.data(), p.bias ? bias.data() : nullptr);
  }
  if (op == "softmax") {
    check_rank(op, "input (rows, columns)", args.input, 2);
    auto input = random_array(args.input, 1);
    return OneDnnSoftmax(SoftmaxParams{args.input[0], args.input[1]}, input.data());
  }
  throw Error("--compare onednn: oneDNN has no counterpart of " + op + " here (conv2d, dense and softmax only)");
}

}  // namespace tessera::baseline
