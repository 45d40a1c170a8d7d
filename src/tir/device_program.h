#pragma once
// A lowered function as a GPU runs it: each root loop nest (a stage computed
// at root, with the stages computed inside it) is one kernel, launched in
// order over the grid its block- and thread-bound loops span; the root
// stages' scratch buffers that pass values from one kernel to the next live
// in device memory (the workspace). Code generators (codegen/gpu_source.h)
// write each kernel; the GPU verifier (tir/verify_gpu.h) checks it first.
#include <array>
#include <string>
#include <vector>

#include "tir/stmt.h"

namespace tessera::tir {

struct DeviceKernel {
  std::string name;                // "<function>_kernel<k>"
  std::vector<ir::Tensor> params;  // the device buffers it reads or writes: arguments, then workspace
  std::array<int64_t, 3> grid{1, 1, 1};   // blocks along x, y, z
  std::array<int64_t, 3> block{1, 1, 1};  // threads of a block along x, y, z
  Stmt body;                       // the nest, its bound loops still in place (each reads its index)
  int64_t shared_bytes = 0;        // the shared buffers allocated in it

  int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
};

struct DeviceProgram {
  std::string name;
  std::vector<ir::Tensor> args;       // the function's arguments (inputs, then outputs)
  std::vector<ir::Tensor> workspace;  // device scratch between kernels
  std::vector<DeviceKernel> kernels;  // launched in this order on one stream
};

// Throws tessera::Error when a root nest cannot be a kernel (a bound loop of
// one axis with two extents); the verifier checks the rest.
DeviceProgram split_device_kernels(const LoweredFunc& f);

}  // namespace tessera::tir
