#pragma once
// Feature vectors of configs for the XGBoost cost model, of three kinds:
//  - knob:    the config's knob values as numbers (cheap, but meaningful only
//             within one config space);
//  - itervar: features::itervar_features of the lowered kernel;
//  - curve:   features::curve_features of the lowered kernel.
// itervar and curve describe loops, not knobs, so they compare configs of
// different tasks too (transfer learning).
#include <vector>

#include "autotvm/task.h"
#include "measure/measure_input.h"

namespace tessera::autotvm {

enum class FeatureType { Knob, Itervar, Curve };  // "knob", "itervar", "curve"

// One number per knob component, knobs in space order:
//  split:    log2 of every part length;
//  reorder:  the permutation's entries;
//  annotate: per axis none 0, unroll 1, vec 2, parallel 3;
//  other:    the value if it is a number or a bool, else the choice's position.
std::vector<float> knob_features(const ConfigSpace& space, const ConfigEntity& config);

// The features of a kernel (itervar or curve), lowered from a DAG and trace.
// A schedule that fails to lower gets all zeros (same length). Knob throws:
// a trace alone has no knobs.
std::vector<float> loop_features(const measure::MeasureInput& input, FeatureType type);

// Features of one config of a task, of any type.
std::vector<float> config_features(const Task& task, const ConfigEntity& config, FeatureType type);

}  // namespace tessera::autotvm
