#pragma once
// NumPy's .npy files (format 1.0-3.0) in C order: how inputs reach `tessera
// run` and outputs leave it. Outputs are float32; inputs are float32 or
// integers (int64/int32/uint8/bool: token ids, masks), read as float32.
#include <string>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// Throws tessera::Error naming `path` for anything else: another dtype, an
// integer float32 cannot hold exactly (beyond 2^24), Fortran order, a
// damaged header, a file shorter than its shape.
NDArray read_npy(const std::string& path);
void write_npy(const NDArray& array, const std::string& path);

}  // namespace tessera::runtime
