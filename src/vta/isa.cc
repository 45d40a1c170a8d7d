#include "vta/isa.h"

#include <fmt/format.h>

#include "tessera/error.h"

namespace tessera::vta {

// The 128-bit layout, low bits first.
//   word 0, every instruction: opcode (3), pop_prev, pop_next, push_prev, push_next (1 each);
//   LOAD / STORE  word 0: buffer (3), sram_base (16), dram_base (32);
//                 word 1: y_size, x_size, x_stride (16 each), y_pad_top, y_pad_bottom, x_pad_left, x_pad_right (4
//                 each);
//   GEMM / ALU    word 0: reset (1), uop_begin (13), uop_end (14), iter_out (14), iter_in (14);
//                 word 1: dst_factor_out, dst_factor_in, src_factor_out, src_factor_in (11 each), then
//                         GEMM: wgt_factor_out, wgt_factor_in (10 each); ALU: alu op (3), use_imm (1), imm (16).

namespace {

// Writes fields low to high into one 64-bit word.
class Packer {
 public:
  Packer& put(uint64_t value, int bits) {
    word_ |= (value & mask(bits)) << at_;
    at_ += bits;
    return *this;
  }
  uint64_t word() const { return word_; }

 private:
  static uint64_t mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
  uint64_t word_ = 0;
  int at_ = 0;
};

class Unpacker {
 public:
  explicit Unpacker(uint64_t word) : word_(word) {}
  uint64_t get(int bits) {
    const uint64_t v = (word_ >> at_) & (bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
    at_ += bits;
    return v;
  }

 private:
  uint64_t word_;
  int at_ = 0;
};

// The widths above, named once for encoding and for check_fields.
constexpr int kSramBits = 16, kDramBits = 32, kSizeBits = 16, kPadBits = 4;
constexpr int kUopBeginBits = 13, kUopEndBits = 14, kIterBits = 14, kAccFactorBits = 11, kWgtFactorBits = 10;
constexpr int kImmBits = 16;

bool is_memory(Opcode op) { return op == Opcode::Load || op == Opcode::Store; }
bool is_loop(Opcode op) { return op == Opcode::Gemm || op == Opcode::Alu; }

}  // namespace

std::string to_string(Opcode op) {
  switch (op) {
    case Opcode::Load: return "LOAD";
    case Opcode::Store: return "STORE";
    case Opcode::Gemm: return "GEMM";
    case Opcode::Finish: return "FINISH";
    case Opcode::Alu: return "ALU";
  }
  return "?";
}

std::string to_string(BufferId b) {
  switch (b) {
    case BufferId::Uop: return "uop";
    case BufferId::Wgt: return "wgt";
    case BufferId::Inp: return "inp";
    case BufferId::Acc: return "acc";
    case BufferId::Out: return "out";
  }
  return "?";
}

std::string to_string(AluOp op) {
  switch (op) {
    case AluOp::Min: return "min";
    case AluOp::Max: return "max";
    case AluOp::Add: return "add";
    case AluOp::Shr: return "shr";
    case AluOp::Mul: return "mul";
  }
  return "?";
}

std::string to_string(Module m) {
  switch (m) {
    case Module::Load: return "load";
    case Module::Compute: return "compute";
    case Module::Store: return "store";
  }
  return "?";
}

Module Instruction::module() const {
  if (op == Opcode::Store) return Module::Store;
  if (op == Opcode::Load && (mem.buffer == BufferId::Inp || mem.buffer == BufferId::Wgt)) return Module::Load;
  return Module::Compute;
}

std::string Instruction::describe() const {
  std::string s = to_string(op);
  if (is_memory(op))
    s += fmt::format(" {} sram[{}] dram[{}] {}x{} stride {} pad {},{},{},{}", to_string(mem.buffer), mem.sram_base,
                     mem.dram_base, mem.y_size, mem.x_size, mem.x_stride, mem.y_pad_top, mem.y_pad_bottom,
                     mem.x_pad_left, mem.x_pad_right);
  if (is_loop(op)) {
    if (op == Opcode::Alu) s += " " + to_string(loop.alu) + (loop.use_imm ? fmt::format(" imm {}", loop.imm) : "");
    s += fmt::format(" uop[{},{}) x {} x {} dst+{}/+{} src+{}/+{}", loop.uop_begin, loop.uop_end, loop.iter_out,
                     loop.iter_in, loop.dst_factor_out, loop.dst_factor_in, loop.src_factor_out, loop.src_factor_in);
    if (op == Opcode::Gemm) s += fmt::format(" wgt+{}/+{}", loop.wgt_factor_out, loop.wgt_factor_in);
    if (loop.reset) s += " reset";
  }
  for (const auto& [set, name] : {std::pair{deps.pop_prev, "pop_prev"},
                                  {deps.pop_next, "pop_next"},
                                  {deps.push_prev, "push_prev"},
                                  {deps.push_next, "push_next"}})
    if (set) s += std::string(" ") + name;
  return s;
}

uint32_t Uop::encode() const { return static_cast<uint32_t>(Packer().put(dst, 11).put(src, 11).put(wgt, 10).word()); }

Uop Uop::decode(uint32_t word) {
  Unpacker u(word);
  Uop op;
  op.dst = static_cast<uint32_t>(u.get(11));
  op.src = static_cast<uint32_t>(u.get(11));
  op.wgt = static_cast<uint32_t>(u.get(10));
  return op;
}

std::array<uint64_t, 2> encode(const Instruction& i) {
  Packer w0, w1;
  w0.put(static_cast<uint64_t>(i.op), 3)
      .put(i.deps.pop_prev, 1)
      .put(i.deps.pop_next, 1)
      .put(i.deps.push_prev, 1)
      .put(i.deps.push_next, 1);
  if (is_memory(i.op)) {
    w0.put(static_cast<uint64_t>(i.mem.buffer), 3).put(i.mem.sram_base, kSramBits).put(i.mem.dram_base, kDramBits);
    w1.put(i.mem.y_size, kSizeBits)
        .put(i.mem.x_size, kSizeBits)
        .put(i.mem.x_stride, kSizeBits)
        .put(i.mem.y_pad_top, kPadBits)
        .put(i.mem.y_pad_bottom, kPadBits)
        .put(i.mem.x_pad_left, kPadBits)
        .put(i.mem.x_pad_right, kPadBits);
  } else if (is_loop(i.op)) {
    const LoopOp& l = i.loop;
    w0.put(l.reset, 1)
        .put(l.uop_begin, kUopBeginBits)
        .put(l.uop_end, kUopEndBits)
        .put(l.iter_out, kIterBits)
        .put(l.iter_in, kIterBits);
    w1.put(l.dst_factor_out, kAccFactorBits)
        .put(l.dst_factor_in, kAccFactorBits)
        .put(l.src_factor_out, kAccFactorBits)
        .put(l.src_factor_in, kAccFactorBits);
    if (i.op == Opcode::Gemm)
      w1.put(l.wgt_factor_out, kWgtFactorBits).put(l.wgt_factor_in, kWgtFactorBits);
    else
      w1.put(static_cast<uint64_t>(l.alu), 3).put(l.use_imm, 1).put(static_cast<uint32_t>(l.imm), kImmBits);
  }
  return {w0.word(), w1.word()};
}

Instruction decode(const std::array<uint64_t, 2>& words) {
  Unpacker w0(words[0]), w1(words[1]);
  Instruction i;
  const uint64_t op = w0.get(3);
  if (op > 4) throw Error(fmt::format("VTA instruction {:#018x} {:#018x}: unknown opcode {}", words[1], words[0], op));
  i.op = static_cast<Opcode>(op);
  i.deps.pop_prev = w0.get(1), i.deps.pop_next = w0.get(1), i.deps.push_prev = w0.get(1), i.deps.push_next = w0.get(1);
  if (is_memory(i.op)) {
    const uint64_t buffer = w0.get(3);
    if (buffer > 4) throw Error(fmt::format("VTA {}: unknown buffer {}", to_string(i.op), buffer));
    i.mem.buffer = static_cast<BufferId>(buffer);
    i.mem.sram_base = static_cast<uint32_t>(w0.get(kSramBits));
    i.mem.dram_base = static_cast<uint32_t>(w0.get(kDramBits));
    i.mem.y_size = static_cast<uint32_t>(w1.get(kSizeBits));
    i.mem.x_size = static_cast<uint32_t>(w1.get(kSizeBits));
    i.mem.x_stride = static_cast<uint32_t>(w1.get(kSizeBits));
    i.mem.y_pad_top = static_cast<uint32_t>(w1.get(kPadBits));
    i.mem.y_pad_bottom = static_cast<uint32_t>(w1.get(kPadBits));
    i.mem.x_pad_left = static_cast<uint32_t>(w1.get(kPadBits));
    i.mem.x_pad_right = static_cast<uint32_t>(w1.get(kPadBits));
  } else if (is_loop(i.op)) {
    LoopOp& l = i.loop;
    l.reset = w0.get(1);
    l.uop_begin = static_cast<uint32_t>(w0.get(kUopBeginBits));
    l.uop_end = static_cast<uint32_t>(w0.get(kUopEndBits));
    l.iter_out = static_cast<uint32_t>(w0.get(kIterBits));
    l.iter_in = static_cast<uint32_t>(w0.get(kIterBits));
    l.dst_factor_out = static_cast<uint32_t>(w1.get(kAccFactorBits));
    l.dst_factor_in = static_cast<uint32_t>(w1.get(kAccFactorBits));
    l.src_factor_out = static_cast<uint32_t>(w1.get(kAccFactorBits));
    l.src_factor_in = static_cast<uint32_t>(w1.get(kAccFactorBits));
    if (i.op == Opcode::Gemm) {
      l.wgt_factor_out = static_cast<uint32_t>(w1.get(kWgtFactorBits));
      l.wgt_factor_in = static_cast<uint32_t>(w1.get(kWgtFactorBits));
    } else {
      const uint64_t alu = w1.get(3);
      if (alu > 4) throw Error(fmt::format("VTA ALU: unknown operation {}", alu));
      l.alu = static_cast<AluOp>(alu);
      l.use_imm = w1.get(1);
      l.imm = static_cast<int16_t>(static_cast<uint16_t>(w1.get(kImmBits)));  // sign-extended
    }
  }
  return i;
}

void check_fields(const Instruction& i, size_t index, const VtaConfig& config) {
  const auto fits = [&](const char* field, int64_t value, int bits) {
    if (value < 0 || value >= (int64_t{1} << bits))
      throw Error(fmt::format("VTA instruction {} ({}): {} = {} does not fit its {} bits", index, to_string(i.op),
                              field, value, bits));
  };
  if (is_memory(i.op)) {
    fits("sram_base", i.mem.sram_base, kSramBits);
    fits("dram_base", i.mem.dram_base, kDramBits);
    fits("y_size", i.mem.y_size, kSizeBits);
    fits("x_size", i.mem.x_size, kSizeBits);
    fits("x_stride", i.mem.x_stride, kSizeBits);
    for (const auto& [name, pad] : {std::pair{"y_pad_top", i.mem.y_pad_top},
                                    {"y_pad_bottom", i.mem.y_pad_bottom},
                                    {"x_pad_left", i.mem.x_pad_left},
                                    {"x_pad_right", i.mem.x_pad_right}})
      fits(name, pad, kPadBits);
    if (i.op == Opcode::Store && i.mem.buffer != BufferId::Out)
      throw Error(
          fmt::format("VTA instruction {} (STORE): stores the output buffer, not {}", index, to_string(i.mem.buffer)));
    if (i.op == Opcode::Load && i.mem.buffer == BufferId::Out)
      throw Error(fmt::format("VTA instruction {} (LOAD): the output buffer is written by GEMM and ALU only", index));
    if (i.mem.x_size > i.mem.x_stride && i.mem.y_size > 1)
      throw Error(fmt::format("VTA instruction {} ({}): rows of {} elements overlap at a stride of {}", index,
                              to_string(i.op), i.mem.x_size, i.mem.x_stride));
  }
  if (is_loop(i.op)) {
    const LoopOp& l = i.loop;
    fits("uop_begin", l.uop_begin, kUopBeginBits);
    fits("uop_end", l.uop_end, kUopEndBits);
    fits("iter_out", l.iter_out, kIterBits);
    fits("iter_in", l.iter_in, kIterBits);
    fits("dst_factor_out", l.dst_factor_out, kAccFactorBits);
    fits("dst_factor_in", l.dst_factor_in, kAccFactorBits);
    fits("src_factor_out", l.src_factor_out, kAccFactorBits);
    fits("src_factor_in", l.src_factor_in, kAccFactorBits);
    if (i.op == Opcode::Gemm) {
      fits("wgt_factor_out", l.wgt_factor_out, kWgtFactorBits);
      fits("wgt_factor_in", l.wgt_factor_in, kWgtFactorBits);
    } else if (l.imm < -(1 << (kImmBits - 1)) || l.imm >= (1 << (kImmBits - 1))) {
      throw Error(fmt::format("VTA instruction {} (ALU): imm = {} does not fit 16 signed bits", index, l.imm));
    }
    if (l.uop_end < l.uop_begin || l.uop_end > config.uop_depth())
      throw Error(fmt::format("VTA instruction {} ({}): micro-ops [{}, {}) outside the {} the buffer holds", index,
                              to_string(i.op), l.uop_begin, l.uop_end, config.uop_depth()));
  }
}

}  // namespace tessera::vta
