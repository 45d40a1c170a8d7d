#pragma once
// A program for VTA as the code generator hands it to a device: the
// instruction stream and the DRAM image it runs against, with the place of
// each tensor in that image. The micro-op kernels the program loads are
// already written into the image; the caller writes the inputs, runs the
// program (Simulator::run) and reads the outputs back.
#include <cstdint>
#include <string>
#include <vector>

#include "vta/isa.h"

namespace tessera::vta {

// Bytes [offset, offset + bytes) of the DRAM image. Every region starts on
// a 256-byte boundary, so its first byte is a whole element of any buffer
// (LOAD and STORE address DRAM in elements of the buffer they fill).
struct DramRegion {
  int64_t offset = 0, bytes = 0;
};

struct Program {
  std::vector<Instruction> instructions;
  std::vector<uint8_t> dram;
  DramRegion uops;
  // Named tensors, e.g. "data", "weight", "residual", "output".
  std::vector<std::pair<std::string, DramRegion>> tensors;

  // Throws tessera::Error when the program has no tensor of that name.
  const DramRegion& tensor(const std::string& name) const;
  // Appends a zeroed region of `bytes` at the next 256-byte boundary.
  DramRegion allocate(int64_t bytes);
  // Copies `bytes` bytes into the named tensor's region (which must be that size) and out of it.
  void write(const std::string& name, const void* bytes, int64_t size);
  void read(const std::string& name, void* bytes, int64_t size) const;
};

}  // namespace tessera::vta
