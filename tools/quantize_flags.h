#pragma once
// --quantize int8 and its calibration flags, shared by compile, bench and
// tune: one set of flags, one meaning (driver::quantize_model), so that a
// network tuned with them is the one compiled with them.
#include <CLI/CLI.hpp>
#include <string>

#include "graph/quantize_network.h"

namespace tessera::cli {

struct QuantizeFlags {
  std::string quantize;  // "int8" or empty (float32)
  std::string calibrate = "8", calibration = "min-max", skip_layers = "0";
  double percentile = 99.99, global_scale = 0;

  // graph::QuantizeOptions from the flags; throws tessera::Error naming a
  // malformed --skip-layers.
  graph::QuantizeOptions options() const;
};

void add_quantize_flags(CLI::App* cmd, QuantizeFlags& o);

}  // namespace tessera::cli
