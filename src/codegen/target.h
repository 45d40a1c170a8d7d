#pragma once
// What code is generated for. "llvm" is the host CPU; "cuda" is reserved for NVIDIA GPUs.
#include <string>

#include "schedule/vector_unit.h"

namespace tessera::codegen {

struct Target {
  std::string kind = "llvm";
  std::string cpu;       // LLVM CPU name, e.g. "znver3"
  std::string features;  // LLVM feature string, e.g. "+avx2,+fma"
  int vector_bits = 256; // widest native fp32 vector
  int vector_registers = 16;  // architectural vector registers (32 with AVX-512)

  // The vector ISA the code may use: "avx512", "avx2", "avx" or "sse" (x86).
  std::string isa = "avx2";

  int vector_lanes() const { return vector_bits >= 32 ? vector_bits / 32 : 1; }
  schedule::VectorUnit vector_unit() const { return {.bits = vector_bits, .registers = vector_registers}; }

  static Target host();  // the machine we run on, with its detected features
  // "llvm", "llvm -mcpu=znver3", "llvm -mattr=+avx2,+fma"; throws tessera::Error otherwise.
  static Target parse(const std::string& text);
  std::string str() const;
};

}  // namespace tessera::codegen
