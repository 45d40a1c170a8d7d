#pragma once
// The inputs a quantized compile calibrates on (--calibrate): a number N
// gives N seeded random samples (uniform in [-1, 1), the same every run), a
// .npy file gives real ones: an array of the model's one input shape is one
// sample; one with an extra leading axis (K, ...) is K samples.
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/ndarray.h"

namespace tessera::driver {

// Throws tessera::Error naming the file or the value when it is neither a
// positive count nor a readable .npy of a shape the model takes.
std::vector<std::vector<runtime::NDArray>> calibration_samples(const graph::Graph& model, const std::string& calibrate);

}  // namespace tessera::driver
