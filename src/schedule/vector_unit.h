#pragma once
// What a register tile must fit in: the vector unit of the target
// (target::Target::vector_unit(); schedules do not know targets).
#include <cstdint>

namespace tessera::schedule {

struct VectorUnit {
  int bits = 256;      // widest fp32 vector
  int registers = 16;  // architectural vector registers
  int64_t lanes() const { return bits >= 32 ? bits / 32 : 1; }  // fp32 lanes of the widest vector
  // AVX-512's FMA reads a broadcast scalar straight from memory ({1toN}). Without
  // it each broadcast is an instruction of its own on the vector ports, so a
  // broadcast value must feed several FMAs (several output-channel blocks).
  bool broadcast_operand() const { return bits >= 512; }
};

}  // namespace tessera::schedule
