#pragma once
// NumPy's .npy files (format 1.0-3.0) of little-endian float32 in C order:
// how inputs reach `tessera run` and outputs leave it.
#include <string>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// Throws tessera::Error naming `path` for anything else: another dtype,
// Fortran order, a damaged header, a file shorter than its shape.
NDArray read_npy(const std::string& path);
void write_npy(const NDArray& array, const std::string& path);

}  // namespace tessera::runtime
