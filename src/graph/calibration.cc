#include "graph/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tessera/error.h"

namespace tessera::graph {

CalibrationMethod calibration_method(const std::string& name) {
  if (name == "min-max") return CalibrationMethod::MinMax;
  if (name == "percentile") return CalibrationMethod::Percentile;
  if (name == "kl-entropy") return CalibrationMethod::KlEntropy;
  throw Error("calibration method " + name + ": min-max, percentile or kl-entropy");
}

std::string to_string(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::MinMax: return "min-max";
    case CalibrationMethod::Percentile: return "percentile";
    case CalibrationMethod::KlEntropy: return "kl-entropy";
  }
  return "?";
}

ValueHistogram::ValueHistogram(int bins) : bins_(static_cast<size_t>(std::max(bins, 2)) & ~size_t{1}, 0) {}

void ValueHistogram::grow_to(double magnitude) {
  if (edge_ == 0) {
    edge_ = magnitude > 0 ? magnitude : std::numeric_limits<float>::min();
    return;
  }
  while (edge_ < magnitude) {
    // Twice the edge: bins 2k and 2k+1 become bin k, the upper half empties.
    const size_t n = bins_.size();
    for (size_t k = 0; k < n / 2; ++k) bins_[k] = bins_[2 * k] + bins_[2 * k + 1];
    std::fill(bins_.begin() + static_cast<std::ptrdiff_t>(n / 2), bins_.end(), 0);
    edge_ *= 2;
  }
}

void ValueHistogram::add(const float* values, int64_t n) {
  double largest = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(values[i])) largest = std::max(largest, std::fabs(static_cast<double>(values[i])));
  grow_to(largest);
  const double width = edge_ / static_cast<double>(bins_.size());
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    if (std::isnan(v)) continue;
    if (count_ == 0) min_ = max_ = v;
    min_ = std::min(min_, v), max_ = std::max(max_, v);
    ++count_;
    const auto bin = static_cast<size_t>(std::fabs(static_cast<double>(v)) / width);
    ++bins_[std::min(bin, bins_.size() - 1)];
  }
}

double percentile_threshold(const ValueHistogram& h, double percentile) {
  const double wanted = static_cast<double>(h.count()) * std::clamp(percentile, 0.0, 100.0) / 100.0;
  const double width = h.edge() / static_cast<double>(h.bins().size());
  double seen = 0;
  for (size_t b = 0; b < h.bins().size(); ++b) {
    seen += static_cast<double>(h.bins()[b]);
    if (seen >= wanted) return static_cast<double>(b + 1) * width;
  }
  return h.edge();
}

namespace {

// KL(p || q) of two unnormalised distributions over the same bins; q is
// positive wherever p is (the expansion below keeps it so).
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double p_sum = 0, q_sum = 0;
  for (size_t i = 0; i < p.size(); ++i) p_sum += p[i], q_sum += q[i];
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) kl += p[i] / p_sum * std::log((p[i] / p_sum) / (q[i] / q_sum));
  return kl;
}

}  // namespace

double kl_entropy_threshold(const ValueHistogram& h, int levels) {
  const std::vector<int64_t>& bins = h.bins();
  const size_t n = bins.size(), l = static_cast<size_t>(std::max(levels, 2));
  const double width = h.edge() / static_cast<double>(n);
  if (n <= l) return h.edge();
  double best_kl = std::numeric_limits<double>::infinity();
  size_t best = n;
  for (size_t i = l; i <= n; ++i) {
    // p: the observed magnitudes clipped at bin i (the outliers into its last bin).
    std::vector<double> p(bins.begin(), bins.begin() + static_cast<std::ptrdiff_t>(i));
    for (size_t b = i; b < n; ++b) p[i - 1] += static_cast<double>(bins[b]);
    // q: the first i bins merged into l levels, each level's count spread
    // evenly over its bins that held values (an empty bin stays empty).
    std::vector<double> q(i, 0.0);
    for (size_t level = 0; level < l; ++level) {
      const size_t first = level * i / l, last = (level + 1) * i / l;
      double total = 0;
      size_t occupied = 0;
      for (size_t b = first; b < last; ++b) {
        total += static_cast<double>(bins[b]);
        occupied += bins[b] > 0;
      }
      for (size_t b = first; b < last; ++b)
        if (bins[b] > 0) q[b] = total / static_cast<double>(occupied);
    }
    // The last bin holds p's outliers; when none of its own values were
    // there, q gets one count (the smoothing TensorRT and MXNet apply) so
    // that the divergence stays finite.
    if (p[i - 1] > 0 && q[i - 1] == 0) q[i - 1] = 1;
    const double kl = kl_divergence(p, q);
    if (kl < best_kl) best_kl = kl, best = i;
  }
  return static_cast<double>(best) * width;
}

ValueRange calibrated_range(const ValueHistogram& h, const CalibrationOptions& o) {
  if (h.count() == 0) throw Error("calibration: a tensor saw no values");
  ValueRange r{std::min(h.min(), 0.0f), std::max(h.max(), 0.0f)};
  if (o.method == CalibrationMethod::MinMax) return r;
  const auto t = static_cast<float>(o.method == CalibrationMethod::Percentile ? percentile_threshold(h, o.percentile)
                                                                              : kl_entropy_threshold(h, o.levels));
  r.lo = std::max(r.lo, -t), r.hi = std::min(r.hi, t);
  return r;
}

}  // namespace tessera::graph
