#include "operator_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <sstream>
#include <thread>

#include "compile/build.h"
#include "tessera/error.h"

namespace tessera::cli {

ops::Shape parse_shape(const std::string& flag, const std::string& text) {
  ops::Shape shape;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, 'x')) {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || end != part.data() + part.size() || value < 0)
      throw Error(fmt::format("{} {}: '{}' is not a non-negative integer (expected a shape like 1x64x56x56)",
                              flag, text, part));
    shape.push_back(value);
  }
  if (shape.empty() || text.back() == 'x')
    throw Error(fmt::format("{} {}: expected a shape like 1x64x56x56", flag, text));
  return shape;
}

void add_operator_flags(CLI::App* cmd, OperatorFlags& f) {
  ops::OpArgs& a = f.args;
  cmd->add_option("operator", f.op, "one of: " + fmt::format("{}", fmt::join(ops::op_names(), ", ")))->required();
  cmd->add_option("--input", f.input, "main operand shape, e.g. 1x64x56x56 (conv2d: NCHW)");
  cmd->add_option("--weight", f.weight, "second operand shape, e.g. 64x64x3x3 (conv2d: OIHW)");
  cmd->add_option("--stride", a.stride, "window stride")->capture_default_str();
  cmd->add_option("--pad", a.pad, "padding on every side")->capture_default_str();
  cmd->add_option("--padding", f.padding, "explicit padding HxW or TOPxLEFTxBOTTOMxRIGHT");
  cmd->add_option("--dilation", a.dilation, "kernel dilation")->capture_default_str();
  cmd->add_option("--layout", a.layout, "conv2d: NCHW, NHWC or NCHWc; dense: NK or packed")
      ->check(CLI::IsMember({"NCHW", "NHWC", "NCHWc", "NK", "packed"}))
      ->capture_default_str();
  cmd->add_option("--ic-bn", a.ic_bn, "NCHWc input channel block (0: automatic)");
  cmd->add_option("--oc-bn", a.oc_bn, "NCHWc output channel block, dense packed weight block (0: automatic)");
  cmd->add_flag("--bias", a.bias, "add a bias per output channel");
  cmd->add_flag("--relu", a.relu, "apply relu to the output");
  cmd->add_option("--pool", a.pool, "pooling window")->capture_default_str();
  cmd->add_flag("--count-include-pad", a.count_include_pad, "avg_pool divides by the full window");
  cmd->add_option("--clip-min", a.clip_min, "clip lower bound")->capture_default_str();
  cmd->add_option("--clip-max", a.clip_max, "clip upper bound")->capture_default_str();
  cmd->add_option("--axis", a.axis, "bias_add channel axis")->capture_default_str();
  cmd->add_option("--groups", a.groups, "group_conv2d: groups (weight OIHW with I = input channels / groups)")
      ->capture_default_str();
  cmd->add_option("--winograd-tile", a.winograd_tile, "conv2d_winograd: output tile m of F(m x m, 3 x 3), 2 or 4")
      ->capture_default_str();
  cmd->add_option("--dtype", a.dtype,
                  "storage of the arguments: float32, or float16 (half precision, fp32 arithmetic; GPU targets)")
      ->check(CLI::IsMember({"float32", "float16"}))
      ->capture_default_str();
}

ops::OpArgs resolve(const OperatorFlags& f) {
  ops::OpArgs a = f.args;
  if (!f.input.empty()) a.input = parse_shape("--input", f.input);
  if (!f.weight.empty()) a.weight = parse_shape("--weight", f.weight);
  if (!f.padding.empty()) a.padding = parse_shape("--padding", f.padding);
  return a;
}

void require_dtype_runs_on(const ops::OpArgs& args, const target::Target& target) {
  if (args.dtype == "float16") build::require_half_storage_target(target);
}

int resolve_threads(int threads) {
  if (threads < 0) throw Error(fmt::format("--threads {}: must be 0 (one per core) or more", threads));
  return threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace tessera::cli
