#pragma once
// A gradient-boosted-trees cost model over XGBoost's C API: trained on
// (feature vector, measured cost) pairs, it scores unmeasured feature vectors
// so that a higher score means a faster kernel.
//
// Targets. Costs are turned into normalised throughput per group of rows
// (one group = one task): y = min cost of the group / cost, so the best
// measured config has y = 1; a failed measurement (cost not finite or <= 0)
// has y = 0. The losses:
//  - Reg:        regression on y (reg:squarederror); scores estimate y.
//  - Rank:       pairwise ranking on y (rank:pairwise), pairs within a group.
//  - RankBinary: pairwise ranking on y binarised per group: 1 for the valid
//                rows with y at or above the group's `binary_quantile`
//                quantile of valid y (the fast ones), 0 for the rest. It
//                teaches "good vs not good" and ignores the order inside each
//                class, which is robust to measurement noise.
// Groups and weights (transfer learning): rows of other tasks form their own
// groups; ranking never pairs rows of different groups, and each group has a
// weight (per row for Reg, per group for the ranking losses).
#include <cstdint>
#include <memory>
#include <vector>

namespace tessera::autotvm {

enum class XgbLoss { Reg, Rank, RankBinary };  // "reg", "rank", "rank-binary"

struct XgbOptions {
  XgbLoss loss = XgbLoss::Rank;
  int rounds = 60;  // boosting rounds per fit
  int max_depth = 4;
  double eta = 0.3;
  int nthread = 1;  // the measurer needs the other core
  uint64_t seed = 0;
  double binary_quantile = 0.7;  // RankBinary: rows at or above this quantile of valid y are "good"
};

struct TrainingRows {
  std::vector<std::vector<float>> features;  // all of one length
  std::vector<double> costs;                 // seconds; failed: +inf (or <= 0)
  std::vector<int> groups;                   // group id per row; empty = all in group 0
  std::vector<float> group_weights;          // weight per group id; empty = 1 for all
};

class XgbCostModel {
 public:
  explicit XgbCostModel(XgbOptions options = {});
  ~XgbCostModel();
  XgbCostModel(XgbCostModel&&) noexcept;
  XgbCostModel& operator=(XgbCostModel&&) noexcept;

  // Replaces the model by one trained on `rows`. Throws tessera::Error when
  // XGBoost fails or the rows are inconsistent; with no row it stays untrained.
  void fit(const TrainingRows& rows);
  void fit(const std::vector<std::vector<float>>& features, const std::vector<double>& costs);
  // One score per row, higher = faster. Throws when untrained.
  std::vector<float> predict(const std::vector<std::vector<float>>& features) const;
  bool trained() const;
  const XgbOptions& options() const { return options_; }

  // The training targets described above (exposed for tests).
  static std::vector<float> normalised_throughput(const std::vector<double>& costs);
  static std::vector<float> binarise(const std::vector<float>& y, double quantile);

 private:
  struct Booster;
  XgbOptions options_;
  std::unique_ptr<Booster> booster_;
};

}  // namespace tessera::autotvm
