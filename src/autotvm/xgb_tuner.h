#pragma once
// The model-based tuner: an XGBoost cost model trained on the measurements so
// far ranks candidates found by simulated annealing over the config space.
#include <memory>

#include "autotvm/tuner.h"

namespace tessera::autotvm {

enum class XgbLoss { Reg, Rank, RankBinary };          // "reg", "rank", "rank-binary"
enum class FeatureType { Knob, Itervar, Curve };       // "knob", "itervar", "curve"

std::unique_ptr<Tuner> make_xgb_tuner(const Task& task, XgbLoss loss, FeatureType feature, uint64_t seed = 0);

}  // namespace tessera::autotvm
