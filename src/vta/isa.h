#pragma once
// The VTA instruction set: what the code generator emits and the simulator
// executes. Three modules run side by side, each its own queue of
// instructions in program order:
//   load    LOAD of inputs and weights into their buffers;
//   compute LOAD of micro-ops and accumulators, GEMM, ALU, FINISH;
//   store   STORE of the narrowed accumulators to DRAM.
// Neighbouring modules hand each other dependency tokens through four
// queues (load -> compute, compute -> load, compute -> store, store ->
// compute): an instruction may wait for ("pop") a token from its previous
// or next module before it starts and send ("push") one to either when it
// ends. That is how a program overlaps loading the next tile with computing
// this one without overwriting a buffer still in use.
//
// GEMM and ALU instructions run a two-level loop over a range of micro-ops:
//   for i in [0, iter_out): for j in [0, iter_in): for u in [uop_begin, uop_end):
//     dst = uop[u].dst + i * dst_factor_out + j * dst_factor_in   (accumulator tile)
//     src = uop[u].src + i * src_factor_out + j * src_factor_in   (input tile; ALU: accumulator tile)
//     wgt = uop[u].wgt + i * wgt_factor_out + j * wgt_factor_in   (weight tile; GEMM)
//     GEMM: acc[dst] = (reset ? 0 : acc[dst]) + inp[src] x wgt[wgt]^T
//     ALU:  acc[dst] = reset ? 0 : op(acc[dst], use_imm ? imm : acc[src])
// and every accumulator tile they write is also narrowed (its low 8 bits)
// into the output buffer, which STORE writes out.
//
// An instruction encodes into 128 bits (two 64-bit words, the layout in
// isa.cc); decode(encode(i)) == i for every field within its width.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vta/config.h"

namespace tessera::vta {

enum class Opcode : uint8_t { Load = 0, Store = 1, Gemm = 2, Finish = 3, Alu = 4 };
enum class BufferId : uint8_t { Uop = 0, Wgt = 1, Inp = 2, Acc = 3, Out = 4 };
enum class AluOp : uint8_t { Min = 0, Max = 1, Add = 2, Shr = 3, Mul = 4 };
enum class Module : uint8_t { Load = 0, Compute = 1, Store = 2 };

std::string to_string(Opcode op);
std::string to_string(BufferId b);
std::string to_string(AluOp op);
std::string to_string(Module m);

// Tokens an instruction waits for (pop) and sends (push): "prev" is the
// module before it in load -> compute -> store, "next" the one after.
struct Dependencies {
  bool pop_prev = false, pop_next = false, push_prev = false, push_next = false;
  bool operator==(const Dependencies&) const = default;
};

// LOAD and STORE: a 2-D block of `y_size` rows of `x_size` elements, rows
// `x_stride` elements apart in DRAM, into (or out of) consecutive buffer
// elements from `sram_base`; a LOAD pads the block with zero elements
// (y_pad rows above and below, x_pad columns left and right). DRAM
// addresses count elements of the buffer's kind from `dram_base`.
struct MemoryOp {
  BufferId buffer = BufferId::Inp;
  uint32_t sram_base = 0;                                                     // 16 bits
  uint32_t dram_base = 0;                                                     // 32 bits
  uint32_t y_size = 0, x_size = 0, x_stride = 0;                              // 16 bits each
  uint32_t y_pad_top = 0, y_pad_bottom = 0, x_pad_left = 0, x_pad_right = 0;  // 4 bits each
  bool operator==(const MemoryOp&) const = default;
};

// GEMM and ALU: the loop above.
struct LoopOp {
  bool reset = false;
  uint32_t uop_begin = 0, uop_end = 0;             // 13 and 14 bits
  uint32_t iter_out = 1, iter_in = 1;              // 14 bits each
  uint32_t dst_factor_out = 0, dst_factor_in = 0;  // 11 bits each
  uint32_t src_factor_out = 0, src_factor_in = 0;  // 11 bits each
  uint32_t wgt_factor_out = 0, wgt_factor_in = 0;  // 10 bits each (GEMM)
  AluOp alu = AluOp::Add;                          // ALU
  bool use_imm = false;                            // ALU: the immediate instead of acc[src]
  int32_t imm = 0;                                 // ALU: 16 bits, signed
  bool operator==(const LoopOp&) const = default;
};

struct Instruction {
  Opcode op = Opcode::Finish;
  Dependencies deps;
  MemoryOp mem;  // LOAD, STORE
  LoopOp loop;   // GEMM, ALU
  bool operator==(const Instruction&) const = default;

  // Which module executes it (a LOAD of micro-ops or accumulators is the compute module's).
  Module module() const;
  // One line for people, e.g. "GEMM uop[0,4) x 7 x 1 dst+16/+0 src+18/+1 wgt+0/+0 pop_prev push_next".
  std::string describe() const;
};

// A micro-op: the three tile indices a GEMM (or ALU) step starts from,
// packed in 32 bits (11 + 11 + 10).
struct Uop {
  uint32_t dst = 0, src = 0, wgt = 0;
  bool operator==(const Uop&) const = default;
  uint32_t encode() const;
  static Uop decode(uint32_t word);
};

std::array<uint64_t, 2> encode(const Instruction& insn);
// Throws tessera::Error for an unknown opcode, buffer or ALU operation.
Instruction decode(const std::array<uint64_t, 2>& words);

// Throws tessera::Error naming instruction `index` and the field that does
// not fit its bits or the configuration's buffers (`config`).
void check_fields(const Instruction& insn, size_t index, const VtaConfig& config);

}  // namespace tessera::vta
