#pragma once
// The model-based tuner: an XGBoost cost model trained on the measurements so
// far ranks candidates found by simulated annealing over the config space.
#include <memory>

#include "autotvm/config_features.h"
#include "autotvm/tuner.h"
#include "autotvm/xgb_cost_model.h"

namespace tessera::autotvm {

std::unique_ptr<Tuner> make_xgb_tuner(const Task& task, XgbLoss loss, FeatureType feature, uint64_t seed = 0);

}  // namespace tessera::autotvm
