#include "ops/requantize.h"

#include <algorithm>
#include <bit>
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
         (relu && clip_max > 0 ? " clip_max=" + number_to_string(clip_max) : "") + (power_of_two ? " shift" : "");
}

int64_t power_of_two_divisor(float x_scale, float w_scale, float y_scale, const std::string& op) {
  const double divisor = static_cast<double>(y_scale) / (static_cast<double>(x_scale) * w_scale);
  int exponent = 0;
  const double mantissa = std::frexp(divisor, &exponent);
  if (mantissa != 0.5 || exponent < 1 || exponent > 31)
    fail(op, "a power-of-two requantization needs y_scale / (x_scale * w_scale) = 2^k, 0 <= k <= 30, got " +
                 number_to_string(divisor));
  return int64_t{1} << (exponent - 1);
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
  if (q.power_of_two) {
    // 2^k from the channel's scale, exact in float; int32 arithmetic, as the accelerator's.
    const ir::Expr divisor =
        ir::cast(ir::DType::Int32, ir::call("round", {ir::Expr(q.y_scale) / (ir::Expr(q.x_scale) * w_scale)}));
    const ir::Expr shifted = ir::floordiv(total + ir::floordiv(divisor, ir::make_int(2)), divisor);
    const ir::Expr saturated = ir::min(
        ir::max(ir::cast(ir::DType::Float32, shifted) + ir::Expr(static_cast<float>(q.y_zero_point)), ir::Expr(lo)),
        ir::Expr(hi));
    return ir::cast(quantized_type(op, q.y_dtype), saturated);
  }
  const ir::Expr multiplier = ir::Expr(q.x_scale) * w_scale / ir::Expr(q.y_scale);
  const ir::Expr rounded = ir::call("round", {ir::cast(ir::DType::Float32, total) * multiplier});
  const ir::Expr saturated =
      ir::min(ir::max(rounded + ir::Expr(static_cast<float>(q.y_zero_point)), ir::Expr(lo)), ir::Expr(hi));
  return ir::cast(quantized_type(op, q.y_dtype), saturated);
}

float requantized(int64_t total, float w_scale, const Requantization& q, float lo, float hi) {
  if (q.power_of_two) {
    const int64_t divisor = power_of_two_divisor(q.x_scale, w_scale, q.y_scale, "requantize");
    // In int32, wrapping as the accelerator's adder does.
    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(total)) +
                                          static_cast<uint32_t>(divisor / 2));
    const int32_t shifted = sum >> std::countr_zero(static_cast<uint64_t>(divisor));  // arithmetic: floor
    return std::min(std::max(static_cast<float>(shifted) + static_cast<float>(q.y_zero_point), lo), hi);
  }
  const float multiplier = q.x_scale * w_scale / q.y_scale;
  const float rounded = std::nearbyint(static_cast<float>(static_cast<int32_t>(total)) * multiplier);
  return std::min(std::max(rounded + static_cast<float>(q.y_zero_point), lo), hi);
}

}  // namespace tessera::ops
