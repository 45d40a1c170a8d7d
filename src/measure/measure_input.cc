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
  const double fastest = min_cost();  // +inf without costs
  return error == ErrorKind::None && std::isfinite(fastest) && fastest > 0;
}

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
