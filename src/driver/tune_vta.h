#pragma once
// Tuning a network for VTA (seed 003's tune_and_evaluate): the network
// quantized and packed as compile --target vta builds it, one
// conv2d_packed.vta task per distinct packed convolution, each searched by
// the AutoTVM tuners over the template's knobs with cost = simulated time
// (measure/vta_measure.h, or the devices behind --runner), every
// measurement in the log, then the network compiled with its default
// configs and with the log's best, and both runs' simulated cycles.
#include <ostream>

#include "driver/tune_network.h"

namespace tessera::driver {

// `o.builder` and `o.runner` measure when set (an RPC runner's devices);
// else this process's simulator. The tuners that learn from the features of
// a kernel's loops (xgb, xgb_rank, ...) learn from the template's knobs here
// (xgb_knob, xgb_rank_knob, ...): the accelerator's programs have no loop
// nest to read. Throws tessera::Error for options a VTA tuning has no use
// for (search auto, the graph tuner, float16).
TuneResult tune_vta(const graph::Graph& model, const target::Target& target, const TuneOptions& o, std::ostream& out,
                    std::ostream& warnings);

}  // namespace tessera::driver
