#include "runtime/stored_values.h"

#include <cmath>
#include <cstring>

namespace tessera::runtime {

int64_t stored_element_bytes(const std::string& stored_as) {
  return stored_as == "int8" || stored_as == "uint8" ? 1 : 4;
}

void store_values(const std::string& stored_as, const float* values, int64_t n, char* out) {
  if (stored_as.empty()) {
    std::memcpy(out, values, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto v = static_cast<int64_t>(std::nearbyint(values[i]));
    if (stored_as == "int8") {
      const auto b = static_cast<int8_t>(v);
      std::memcpy(out + i, &b, 1);
    } else if (stored_as == "uint8") {
      out[i] = static_cast<char>(static_cast<uint8_t>(v));
    } else {  // int32 (ExecutableGraph::validate)
      const auto w = static_cast<int32_t>(v);
      std::memcpy(out + i * 4, &w, 4);
    }
  }
}

void load_values(const std::string& stored_as, const char* in, int64_t n, float* values) {
  if (stored_as.empty()) {
    std::memcpy(values, in, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (stored_as == "int8") {
      int8_t b = 0;
      std::memcpy(&b, in + i, 1);
      values[i] = static_cast<float>(b);
    } else if (stored_as == "uint8") {
      values[i] = static_cast<float>(static_cast<uint8_t>(in[i]));
    } else {
      int32_t w = 0;
      std::memcpy(&w, in + i * 4, 4);
      values[i] = static_cast<float>(w);
    }
  }
}

}  // namespace tessera::runtime
