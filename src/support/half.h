#pragma once
// IEEE 754 half precision on the host: what the code generators' half
// storage (ir::DType::Float16) holds, for copying arrays in and out of it.
#include <cstdint>
#include <cstring>
#include <vector>

namespace tessera::support {

// Rounds to the nearest half, ties to even; overflow gives infinity, NaN stays NaN.
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past the largest half, 65504
  if (abs < 0x38800000u) {
    // A subnormal half (or zero): the value in units of 2^-24, rounded to even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14 .. 24
    uint32_t h = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // A normal half: rebias the exponent, round the 13 dropped mantissa bits to even.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right too
  return static_cast<uint16_t>(sign | h);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t x;
  if (exponent == 0x1f) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    x = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    x = sign;
  } else {
    // Subnormal: mantissa x 2^-24, normalised.
    int e = -1;
    uint32_t m = mantissa;
    do {
      ++e;
      m <<= 1;
    } while ((m & 0x400u) == 0);
    x = sign | (static_cast<uint32_t>(112 - e) << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Arrays of them: what crosses to and from half-stored device buffers.
inline std::vector<uint16_t> to_halves(const float* values, int64_t n) {
  std::vector<uint16_t> halves(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) halves[i] = float_to_half(values[i]);
  return halves;
}
inline void from_halves(const uint16_t* halves, int64_t n, float* values) {
  for (int64_t i = 0; i < n; ++i) values[i] = half_to_float(halves[i]);
}
// Rounds values to the nearest half in place (what a half-stored input holds).
inline void round_to_halves(float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) values[i] = half_to_float(float_to_half(values[i]));
}

}  // namespace tessera::support
