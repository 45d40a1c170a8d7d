#include "ops/requantize.h"

#include <algorithm>
#include <cmath>

#include "ops/common.h"
#include "ops/quantize.h"

namespace tessera::ops {

std::pair<float, float> Requantization::saturation(const std::string& op) const {
  const auto [lo, most] = output_range(op, y_dtype, y_zero_point, relu);
  float hi = static_cast<float>(most);
  if (relu && clip_max > 0) hi = std::min(hi, std::nearbyint(clip_max / y_scale) + static_cast<float>(y_zero_point));
  return {static_cast<float>(lo), hi};
}

std::string Requantization::to_string(float x_scale_of, int64_t x_zero_point, const std::string& x_dtype) const {
  return QuantizeAttrs{x_scale_of, x_zero_point, x_dtype}.to_string() + " -> " +
         QuantizeAttrs{y_scale, y_zero_point, y_dtype}.to_string() + (relu ? " relu" : "") +
         (relu && clip_max > 0 ? " clip_max=" + number_to_string(clip_max) : "");
}

int64_t bias_in_units(float bias, float x_scale, float w_scale) {
  const double unit = static_cast<double>(x_scale) * w_scale;
  return static_cast<int64_t>(std::clamp(std::nearbyint(bias / unit), -2147483648.0, 2147483647.0));
}

ir::DType int8_anchor_dtype(const std::string& op, const std::string& x_dtype, const std::string& y_dtype,
                            const std::vector<ir::DType>& in) {
  const ir::DType want[] = {quantized_type(op, x_dtype), ir::DType::Int8, ir::DType::Float32, ir::DType::Int32};
  const char* what[] = {"x", "w", "w_scale", "bias"};
  for (size_t i = 0; i < 4; ++i)
    if (in.at(i) != want[i])
      fail(op, std::string(what[i]) + " is " + ir::to_string(in[i]) + ", expected " + ir::to_string(want[i]));
  return quantized_type(op, y_dtype);
}

ir::Expr requantized(const ir::Expr& total, const ir::Expr& w_scale, const Requantization& q, const std::string& op) {
  const auto [lo, hi] = q.saturation(op);
  const ir::Expr multiplier = ir::Expr(q.x_scale) * w_scale / ir::Expr(q.y_scale);
  const ir::Expr rounded = ir::call("round", {ir::cast(ir::DType::Float32, total) * multiplier});
  const ir::Expr saturated =
      ir::min(ir::max(rounded + ir::Expr(static_cast<float>(q.y_zero_point)), ir::Expr(lo)), ir::Expr(hi));
  return ir::cast(quantized_type(op, q.y_dtype), saturated);
}

float requantized(int64_t total, float w_scale, const Requantization& q, float lo, float hi) {
  const float multiplier = q.x_scale * w_scale / q.y_scale;
  const float rounded = std::nearbyint(static_cast<float>(static_cast<int32_t>(total)) * multiplier);
  return std::min(std::max(rounded + static_cast<float>(q.y_zero_point), lo), hi);
}

}  // namespace tessera::ops
