#pragma once
// A target from the text users write, the one way the CLI, the jit, Python
// and the C++ API read it: "" is this host; a cuda target takes what its
// text does not state (the arch, the block limits) from the GPU present, so
// that kernels compile for the GPU they will run on, else sm_80's defaults.
#include <string>

#include "target/target.h"

namespace tessera::driver {

// Throws tessera::Error naming the text (target::Target::parse's reasons).
target::Target parse_target(const std::string& text);

}  // namespace tessera::driver
