#pragma once
// Validators for numeric flags, with messages a user can act on (CLI11's own
// number validators print the range up to DBL_MAX, and let nan through).
#include <cmath>
#include <functional>
#include <string>

namespace tessera::cli {

// A whole number of at least `least`: "must be at least 1".
inline std::function<std::string(const std::string&)> at_least(long long least) {
  return [least](const std::string& text) -> std::string {
    try {
      size_t used = 0;
      const long long v = std::stoll(text, &used);
      if (used == text.size() && v >= least) return "";
    } catch (const std::exception&) {
    }
    return "must be a whole number of at least " + std::to_string(least) + ", got " + text;
  };
}

// A positive, finite number of seconds.
inline std::string positive_seconds(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && v > 0) return "";
  } catch (const std::exception&) {
  }
  return "must be a positive, finite number of seconds, got " + text;
}

// Zero or a positive, finite number of minutes (CLI11's NonNegativeNumber
// takes inf, and nan, and prints the range up to DBL_MAX).
inline std::string minutes_or_zero(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && v >= 0) return "";
  } catch (const std::exception&) {
  }
  return "must be 0 (no limit) or a positive, finite number of minutes, got " + text;
}

// HOST:PORT with a port from 1 to 65535.
inline std::string host_and_port(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return "must be HOST:PORT, got " + text;
  try {
    size_t used = 0;
    const std::string port = text.substr(colon + 1);
    const long v = std::stol(port, &used);
    if (used == port.size() && v >= 1 && v <= 65535) return "";
  } catch (const std::exception&) {
  }
  return "must be HOST:PORT with a port from 1 to 65535, got " + text;
}

}  // namespace tessera::cli
