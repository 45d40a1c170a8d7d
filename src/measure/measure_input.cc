#include "measure/measure_input.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "tessera/error.h"

namespace tessera::measure {

namespace {

// The spelling of each kind in records and messages; one table for both directions.
constexpr std::array<std::pair<ErrorKind, const char*>, 9> kErrorKindNames{{
    {ErrorKind::None, "none"},
    {ErrorKind::Instantiation, "instantiation"},
    {ErrorKind::CompileHost, "compile-host"},
    {ErrorKind::CompileDevice, "compile-device"},
    {ErrorKind::RuntimeDevice, "runtime-device"},
    {ErrorKind::WrongAnswer, "wrong-answer"},
    {ErrorKind::BuildTimeout, "build-timeout"},
    {ErrorKind::RunTimeout, "run-timeout"},
    {ErrorKind::Unknown, "unknown"},
}};

}  // namespace

std::string to_string(ErrorKind k) {
  for (const auto& [kind, name] : kErrorKindNames)
    if (kind == k) return name;
  return "unknown";
}

ErrorKind error_kind_from_string(const std::string& s) {
  for (const auto& [kind, name] : kErrorKindNames)
    if (s == name) return kind;
  throw Error("unknown measure error kind '" + s + "'");
}

bool MeasureResult::valid() const {
  if (error != ErrorKind::None || costs.empty()) return false;
  return std::all_of(costs.begin(), costs.end(), [](double c) { return std::isfinite(c) && c > 0; });
}

bool MeasureResult::conclusive() const {
  switch (error) {
    case ErrorKind::None: return valid();
    case ErrorKind::Instantiation:
    case ErrorKind::CompileHost:
    case ErrorKind::CompileDevice:
    case ErrorKind::RuntimeDevice:
    case ErrorKind::WrongAnswer: return true;
    case ErrorKind::BuildTimeout:
    case ErrorKind::RunTimeout:
    case ErrorKind::Unknown: return false;
  }
  return false;
}

double MeasureResult::rank_cost() const { return valid() ? median_cost() : std::numeric_limits<double>::infinity(); }

double MeasureResult::min_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  return *std::min_element(costs.begin(), costs.end());
}

double MeasureResult::mean_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  return std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
}

double MeasureResult::median_cost() const {
  if (costs.empty()) return std::numeric_limits<double>::infinity();
  std::vector<double> sorted = costs;
  std::sort(sorted.begin(), sorted.end());
  const size_t mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

}  // namespace tessera::measure
