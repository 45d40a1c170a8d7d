#include "quantize_flags.h"

#include <sstream>

#include "tessera/error.h"

namespace tessera::cli {

graph::QuantizeOptions QuantizeFlags::options() const {
  graph::QuantizeOptions q;
  q.calibration.method = graph::calibration_method(calibration);
  q.calibration.percentile = percentile;
  q.global_scale = global_scale;
  q.skip_layers.clear();
  // A comma-separated list; an empty value means none (CLI11's vector
  // options refuse an empty value, so the list is parsed here).
  std::stringstream list(skip_layers);
  for (std::string layer; std::getline(list, layer, ',');) {
    if (layer.empty()) continue;
    try {
      size_t used = 0;
      q.skip_layers.insert(std::stoi(layer, &used));
      if (used != layer.size()) throw std::invalid_argument(layer);
    } catch (const std::exception&) {
      throw Error("--skip-layers " + skip_layers + ": convolution indices, e.g. 0 or 0,5 (none: an empty value)");
    }
  }
  return q;
}

void add_quantize_flags(CLI::App* cmd, QuantizeFlags& o) {
  cmd->add_option("--quantize", o.quantize,
                  "int8: compute the convolutions in int8 (weights per output channel, activations calibrated; "
                  "CPU targets)")
      ->check(CLI::IsMember({"int8"}));
  cmd->add_option("--calibrate", o.calibrate,
                  "with --quantize: N seeded random samples, or a .npy of one input or K stacked along a first axis")
      ->capture_default_str();
  cmd->add_option("--calibration", o.calibration, "with --quantize: how an activation's range is chosen")
      ->check(CLI::IsMember({"min-max", "percentile", "kl-entropy"}))
      ->capture_default_str();
  cmd->add_option("--percentile", o.percentile, "with --calibration percentile: of the magnitudes kept")
      ->capture_default_str();
  cmd->add_option("--skip-layers", o.skip_layers,
                  "with --quantize: convolutions kept in float32, by index in the graph (empty: none)")
      ->capture_default_str();
  cmd->add_option("--global-scale", o.global_scale,
                  "with --quantize: every activation in [-S, S] (seed 003's global_scale), no calibration")
      ->capture_default_str();
}

}  // namespace tessera::cli
