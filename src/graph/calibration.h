#pragma once
// Calibration: the range of real values a tensor's int8 quantization covers,
// chosen from the values it took on calibration inputs (seed 003's
// calibrate_mode: global_scale, kl_divergence, percentile). A tensor's values
// go into a ValueHistogram batch after batch; calibrated_range reads the
// range off it by one of three methods:
//
//   min-max      every value seen is representable; one outlier stretches the
//                scale for all the others.
//   percentile   the magnitude below which `percentile` % of the values lie;
//                the rest saturate.
//   kl-entropy   the clipping threshold whose quantized distribution (levels
//                steps) loses the least information against the observed one:
//                the Kullback-Leibler divergence of the two, minimised over the
//                thresholds (TensorRT's and MXNet's method).
//
// The histogram counts magnitudes |v| in `bins` equal bins over [0, edge];
// a value beyond the edge doubles it (pairs of bins merge, exactly) until it
// fits, so any number of batches takes fixed memory. The exact minimum and
// maximum are kept beside it.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::graph {

enum class CalibrationMethod { MinMax, Percentile, KlEntropy };
// "min-max", "percentile", "kl-entropy"; throws tessera::Error listing them.
CalibrationMethod calibration_method(const std::string& name);
std::string to_string(CalibrationMethod m);

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::MinMax;
  double percentile = 99.99;  // of the magnitudes, for Percentile
  // The quantized magnitudes KlEntropy compares with: 128, a signed int8's,
  // as TensorRT's method has it (255 for a uint8 after a ReLU measured worse
  // on the digits CNN: more levels make small thresholds look lossless).
  int levels = 128;
};

class ValueHistogram {
 public:
  explicit ValueHistogram(int bins = 2048);
  void add(const float* values, int64_t n);  // NaN values are not counted

  int64_t count() const { return count_; }
  float min() const { return min_; }
  float max() const { return max_; }
  double edge() const { return edge_; }  // the bins cover [0, edge]
  const std::vector<int64_t>& bins() const { return bins_; }

 private:
  void grow_to(double magnitude);
  std::vector<int64_t> bins_;
  double edge_ = 0;
  int64_t count_ = 0;
  float min_ = 0, max_ = 0;
};

struct ValueRange {
  float lo = 0, hi = 0;
};
// The range to quantize: [min, max] (MinMax), or the threshold t of the
// magnitudes clipping it to [max(min, -t), min(max, t)]. Always contains 0
// (a zero padding must be exact). Throws tessera::Error when the histogram is
// empty.
ValueRange calibrated_range(const ValueHistogram& h, const CalibrationOptions& options);

// The threshold on magnitudes each method reads off the histogram (exposed
// for tests): the bin edge below which `percentile` % of the values lie, and
// the one minimising KL(observed || quantized to `levels`).
double percentile_threshold(const ValueHistogram& h, double percentile);
double kl_entropy_threshold(const ValueHistogram& h, int levels);

}  // namespace tessera::graph
