#include "driver/calibration_samples.h"

#include <charconv>
#include <cstring>

#include "runtime/npy.h"
#include "tessera/error.h"

namespace tessera::driver {

std::vector<std::vector<runtime::NDArray>> calibration_samples(const graph::Graph& model, const std::string& calibrate) {
  const std::vector<graph::NodeId> inputs = model.input_ids();
  std::vector<std::vector<runtime::NDArray>> samples;
  int count = 0;
  const auto [end, error] = std::from_chars(calibrate.data(), calibrate.data() + calibrate.size(), count);
  if (error == std::errc() && end == calibrate.data() + calibrate.size()) {
    if (count <= 0) throw Error("--calibrate " + calibrate + ": a number of samples must be positive");
    for (int s = 0; s < count; ++s) {
      std::vector<runtime::NDArray>& sample = samples.emplace_back();
      for (size_t i = 0; i < inputs.size(); ++i) {
        sample.emplace_back(model.node(inputs[i]).type.shape);
        sample.back().fill_random(0x5eedULL + 7919ULL * static_cast<uint64_t>(s) + i);
      }
    }
    return samples;
  }
  if (inputs.size() != 1)
    throw Error("--calibrate " + calibrate + ": a .npy file calibrates a model of one input; this one has " +
                std::to_string(inputs.size()) + " (give a number of random samples)");
  const runtime::NDArray all = runtime::read_npy(calibrate);
  const graph::Shape& shape = model.node(inputs[0]).type.shape;
  if (all.shape() == shape) {
    samples.emplace_back();
    samples.back().emplace_back(shape);
    std::memcpy(samples.back().back().data(), all.data(), static_cast<size_t>(all.size()) * sizeof(float));
    return samples;
  }
  graph::Shape each(all.shape().begin() + (all.shape().empty() ? 0 : 1), all.shape().end());
  if (all.shape().empty() || each != shape)
    throw Error("--calibrate " + calibrate + ": shape " + ops::shape_to_string(all.shape()) + " is neither the input's " +
                ops::shape_to_string(shape) + " nor K of it");
  const int64_t per = all.size() / all.shape()[0];
  for (int64_t k = 0; k < all.shape()[0]; ++k) {
    samples.emplace_back();
    samples.back().emplace_back(shape);
    std::memcpy(samples.back().back().data(), all.data() + k * per, static_cast<size_t>(per) * sizeof(float));
  }
  return samples;
}

}  // namespace tessera::driver
