#pragma once
// The VTA configuration a target names (target::Target::accelerator_config:
// its -config=, else the seed's default): what graph packing, the code
// generator, the tuner and the builder of a "vta" target all read.
#include "target/target.h"
#include "vta/config.h"

namespace tessera::vta {

// Throws tessera::Error when the target is not a "vta" one.
VtaConfig config_of(const target::Target& target);

}  // namespace tessera::vta
