#include "vta/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>

#include "tessera/error.h"

namespace tessera::vta {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The micro-op loop GEMM and ALU share (isa.h): `step(i, j, u, dst, src,
// wgt)` for each step, with its tile indices; returns the number of steps.
template <typename Step>
int64_t for_each_step(const LoopOp& l, const std::vector<Uop>& uops, Step&& step) {
  int64_t steps = 0;
  for (int64_t i = 0; i < l.iter_out; ++i)
    for (int64_t j = 0; j < l.iter_in; ++j)
      for (uint32_t u = l.uop_begin; u < l.uop_end; ++u, ++steps) {
        const Uop& op = uops[u];
        step(i, j, u, op.dst + i * l.dst_factor_out + j * l.dst_factor_in,
             op.src + i * l.src_factor_out + j * l.src_factor_in, op.wgt + i * l.wgt_factor_out + j * l.wgt_factor_in);
      }
  return steps;
}

// An element from DRAM, or zeros where a LOAD pads its block (`src` null).
void copy_or_zero(void* dst, const uint8_t* src, int64_t bytes) {
  if (src)
    std::memcpy(dst, src, bytes);
  else
    std::memset(dst, 0, bytes);
}

std::string where(const Instruction& insn, size_t index) {
  return fmt::format("VTA instruction {} ({})", index, insn.describe());
}

}  // namespace

Simulator::Simulator(VtaConfig config, CycleModel model) : config_(std::move(config)), model_(model) {
  config_.validate("VTA configuration");
  uop_.assign(config_.uop_depth(), Uop{});
  inp_.assign(config_.inp_depth() * config_.inp_element_bytes(), 0);
  wgt_.assign(config_.wgt_depth() * config_.wgt_element_bytes(), 0);
  acc_.assign(config_.acc_depth() * config_.batch() * config_.block_out(), 0);
  out_.assign(config_.out_depth() * config_.out_element_bytes(), 0);
}

std::vector<int32_t> Simulator::accumulator(int64_t index) const {
  const int64_t n = int64_t{config_.batch()} * config_.block_out();
  if (index < 0 || index >= config_.acc_depth()) throw Error(fmt::format("accumulator tile {} out of range", index));
  return std::vector<int32_t>(acc_.begin() + index * n, acc_.begin() + (index + 1) * n);
}

SimulationStats Simulator::run(const std::vector<Instruction>& program, std::vector<uint8_t>& dram,
                               Execution execution) {
  functional_ = execution == Execution::Functional;
  std::vector<size_t> queue[3];
  for (size_t i = 0; i < program.size(); ++i) {
    check_fields(program[i], i, config_);
    const Module m = program[i].module();
    const Dependencies& d = program[i].deps;
    if ((m == Module::Load && (d.pop_prev || d.push_prev)) || (m == Module::Store && (d.pop_next || d.push_next)))
      throw Error(where(program[i], i) + ": the " + to_string(m) + " module has no " +
                  (m == Module::Load ? "previous" : "next") + " module to exchange tokens with");
    queue[static_cast<int>(m)].push_back(i);
  }
  // Token queues between neighbours, each token the cycle it was pushed.
  std::deque<int64_t> load_to_compute, compute_to_load, compute_to_store, store_to_compute;
  const auto pops = [&](Module m, const Dependencies& d) {
    std::vector<std::deque<int64_t>*> q;
    if (m == Module::Load && d.pop_next) q.push_back(&compute_to_load);
    if (m == Module::Compute && d.pop_prev) q.push_back(&load_to_compute);
    if (m == Module::Compute && d.pop_next) q.push_back(&store_to_compute);
    if (m == Module::Store && d.pop_prev) q.push_back(&compute_to_store);
    return q;
  };
  SimulationStats stats;
  ModuleStats* module_stats[3] = {&stats.load, &stats.compute, &stats.store};
  size_t next[3] = {0, 0, 0};
  int64_t free_at[3] = {0, 0, 0};
  for (;;) {
    int chosen = -1;
    int64_t chosen_start = std::numeric_limits<int64_t>::max();
    bool remaining = false;
    for (int m = 0; m < 3; ++m) {
      if (next[m] == queue[m].size()) continue;
      remaining = true;
      const Instruction& insn = program[queue[m][next[m]]];
      int64_t start = free_at[m];
      bool ready = true;
      for (std::deque<int64_t>* q : pops(static_cast<Module>(m), insn.deps)) {
        if (q->empty())
          ready = false;
        else
          start = std::max(start, q->front());
      }
      if (ready && start < chosen_start) chosen = m, chosen_start = start;
    }
    if (!remaining) break;
    if (chosen < 0) {
      // Every module waits for a token no instruction will push: the device would hang.
      for (int m = 0; m < 3; ++m)
        if (next[m] < queue[m].size()) {
          const size_t i = queue[m][next[m]];
          throw Error(where(program[i], i) +
                      ": waits for a dependency token that no instruction before it pushes "
                      "(the device would hang)");
        }
    }
    const size_t i = queue[chosen][next[chosen]++];
    const Instruction& insn = program[i];
    const Module m = static_cast<Module>(chosen);
    for (std::deque<int64_t>* q : pops(m, insn.deps)) q->pop_front();
    const int64_t cycles = execute(insn, i, dram, stats);
    const int64_t end = chosen_start + cycles;
    free_at[chosen] = end;
    ModuleStats& ms = *module_stats[chosen];
    ++ms.instructions;
    ms.busy_cycles += cycles;
    ms.end_cycle = end;
    if (insn.deps.push_prev) (m == Module::Compute ? compute_to_load : store_to_compute).push_back(end);
    if (insn.deps.push_next) (m == Module::Load ? load_to_compute : compute_to_store).push_back(end);
  }
  stats.cycles = std::max({free_at[0], free_at[1], free_at[2]});
  return stats;
}

int64_t Simulator::execute(const Instruction& insn, size_t index, std::vector<uint8_t>& dram, SimulationStats& stats) {
  switch (insn.op) {
    case Opcode::Load: return load(insn, index, dram, stats);
    case Opcode::Store: return store(insn, index, dram, stats);
    case Opcode::Gemm: return gemm(insn, index, stats);
    case Opcode::Alu: return alu(insn, index, stats);
    case Opcode::Finish: return 1;
  }
  return 1;
}

int64_t Simulator::load(const Instruction& insn, size_t index, const std::vector<uint8_t>& dram,
                        SimulationStats& stats) {
  const MemoryOp& m = insn.mem;
  int64_t element = 0, depth = 0;
  switch (m.buffer) {
    case BufferId::Uop: element = VtaConfig::kUopBytes, depth = config_.uop_depth(); break;
    case BufferId::Inp: element = config_.inp_element_bytes(), depth = config_.inp_depth(); break;
    case BufferId::Wgt: element = config_.wgt_element_bytes(), depth = config_.wgt_depth(); break;
    case BufferId::Acc: element = config_.acc_element_bytes(), depth = config_.acc_depth(); break;
    case BufferId::Out: throw Error(where(insn, index) + ": the output buffer cannot be loaded");
  }
  const int64_t row = int64_t{m.x_pad_left} + m.x_size + m.x_pad_right;
  const int64_t rows = int64_t{m.y_pad_top} + m.y_size + m.y_pad_bottom;
  if (m.sram_base + rows * row > depth)
    throw Error(fmt::format("{}: writes {} elements from {} into a {} buffer of {}", where(insn, index), rows * row,
                            m.sram_base, to_string(m.buffer), depth));
  if (m.y_size > 0 && m.x_size > 0) {
    const int64_t last = (int64_t{m.dram_base} + (int64_t{m.y_size} - 1) * m.x_stride + m.x_size) * element;
    if (last > static_cast<int64_t>(dram.size()))
      throw Error(fmt::format("{}: reads DRAM bytes up to {}, past its {}", where(insn, index), last, dram.size()));
  }
  int64_t padded = 0;
  const bool copies = functional_ || m.buffer == BufferId::Uop;
  for (int64_t y = 0; y < rows; ++y)
    for (int64_t x = 0; x < row; ++x) {
      const int64_t sram = m.sram_base + y * row + x;
      const bool pad =
          y < m.y_pad_top || y >= m.y_pad_top + m.y_size || x < m.x_pad_left || x >= m.x_pad_left + m.x_size;
      padded += pad;
      if (!copies) continue;
      const uint8_t* src =
          pad ? nullptr
              : dram.data() + ((m.dram_base + (y - m.y_pad_top) * int64_t{m.x_stride} + (x - m.x_pad_left)) * element);
      switch (m.buffer) {
        case BufferId::Uop: {
          uint32_t word = 0;
          if (src) std::memcpy(&word, src, 4);
          uop_[sram] = Uop::decode(word);
          break;
        }
        case BufferId::Inp: copy_or_zero(&inp_[sram * element], src, element); break;
        case BufferId::Wgt: copy_or_zero(&wgt_[sram * element], src, element); break;
        case BufferId::Acc: copy_or_zero(&acc_[sram * (element / 4)], src, element); break;
        case BufferId::Out: break;
      }
    }
  const int64_t bytes = int64_t{m.y_size} * m.x_size * element;
  stats.bytes_loaded[m.buffer] += bytes;
  return model_.dma_setup + model_.row_setup * std::max<int64_t>(0, int64_t{m.y_size} - 1) +
         ceil_div(bytes, model_.bus_bytes) + padded;
}

int64_t Simulator::store(const Instruction& insn, size_t index, std::vector<uint8_t>& dram, SimulationStats& stats) {
  const MemoryOp& m = insn.mem;
  if (m.y_pad_top || m.y_pad_bottom || m.x_pad_left || m.x_pad_right)
    throw Error(where(insn, index) + ": a STORE has no padding");
  const int64_t element = config_.out_element_bytes();
  if (m.sram_base + int64_t{m.y_size} * m.x_size > config_.out_depth())
    throw Error(fmt::format("{}: reads {} output tiles from {}, past the buffer's {}", where(insn, index),
                            int64_t{m.y_size} * m.x_size, m.sram_base, config_.out_depth()));
  if (m.y_size > 0 && m.x_size > 0) {
    const int64_t last = (int64_t{m.dram_base} + (int64_t{m.y_size} - 1) * m.x_stride + m.x_size) * element;
    if (last > static_cast<int64_t>(dram.size()))
      throw Error(fmt::format("{}: writes DRAM bytes up to {}, past its {}", where(insn, index), last, dram.size()));
  }
  for (int64_t y = 0; functional_ && y < m.y_size; ++y)
    for (int64_t x = 0; x < m.x_size; ++x)
      std::memcpy(dram.data() + (m.dram_base + y * m.x_stride + x) * element,
                  &out_[(m.sram_base + y * m.x_size + x) * element], element);
  const int64_t bytes = int64_t{m.y_size} * m.x_size * element;
  stats.bytes_stored += bytes;
  return model_.dma_setup + model_.row_setup * std::max<int64_t>(0, int64_t{m.y_size} - 1) +
         ceil_div(bytes, model_.bus_bytes);
}

void Simulator::narrow(int64_t tile) {
  const int64_t n = int64_t{config_.batch()} * config_.block_out();
  for (int64_t k = 0; k < n; ++k) out_[tile * n + k] = static_cast<int8_t>(acc_[tile * n + k] & 0xff);
}

int64_t Simulator::gemm(const Instruction& insn, size_t index, SimulationStats& stats) {
  const LoopOp& l = insn.loop;
  const int batch = config_.batch(), bin = config_.block_in(), bout = config_.block_out();
  const int64_t steps =
      for_each_step(l, uop_, [&](int64_t i, int64_t j, uint32_t u, int64_t dst, int64_t src, int64_t wgt) {
        if (dst >= config_.acc_depth() || src >= config_.inp_depth() || wgt >= config_.wgt_depth())
          throw Error(
              fmt::format("{}: step ({}, {}, uop {}) reaches acc[{}] inp[{}] wgt[{}], past the buffers' {}, {}, {}",
                          where(insn, index), i, j, u, dst, src, wgt, config_.acc_depth(), config_.inp_depth(),
                          config_.wgt_depth()));
        if (!l.reset) stats.gemm_macs += config_.macs_per_gemm();
        if (!functional_) return;
        int32_t* acc = &acc_[dst * batch * bout];
        if (l.reset) {
          std::fill(acc, acc + batch * bout, 0);
        } else {
          const int8_t* a = &inp_[src * batch * bin];
          const int8_t* w = &wgt_[wgt * bout * bin];
          for (int b = 0; b < batch; ++b)
            for (int o = 0; o < bout; ++o) {
              int32_t sum = 0;
              for (int k = 0; k < bin; ++k) sum += int32_t{a[b * bin + k]} * int32_t{w[o * bin + k]};
              acc[b * bout + o] += sum;
            }
        }
        narrow(dst);
      });
  stats.gemm_steps += steps;
  stats.gemm_cycles += l.reset ? 0 : steps;
  return model_.pipeline_fill + steps;
}

int64_t Simulator::alu(const Instruction& insn, size_t index, SimulationStats& stats) {
  const LoopOp& l = insn.loop;
  const int64_t n = int64_t{config_.batch()} * config_.block_out();
  const int64_t steps =
      for_each_step(l, uop_, [&](int64_t i, int64_t j, uint32_t u, int64_t dst, int64_t src, int64_t) {
        if (dst >= config_.acc_depth() || (!l.use_imm && src >= config_.acc_depth()))
          throw Error(fmt::format("{}: step ({}, {}, uop {}) reaches acc[{}] and acc[{}], past the buffer's {}",
                                  where(insn, index), i, j, u, dst, src, config_.acc_depth()));
        if (!functional_) return;
        int32_t* a = &acc_[dst * n];
        const int32_t* b = l.use_imm ? nullptr : &acc_[src * n];
        for (int64_t k = 0; k < n; ++k) {
          if (l.reset) {
            a[k] = 0;
            continue;
          }
          const int32_t x = a[k], y = l.use_imm ? l.imm : b[k];
          switch (l.alu) {
            case AluOp::Min: a[k] = std::min(x, y); break;
            case AluOp::Max: a[k] = std::max(x, y); break;
            case AluOp::Add: a[k] = static_cast<int32_t>(static_cast<uint32_t>(x) + static_cast<uint32_t>(y)); break;
            case AluOp::Mul: a[k] = static_cast<int32_t>(static_cast<uint32_t>(x) * static_cast<uint32_t>(y)); break;
            case AluOp::Shr:  // arithmetic; a negative amount shifts left
              a[k] = y >= 0 ? x >> std::min(y, 31) : static_cast<int32_t>(static_cast<uint32_t>(x) << std::min(-y, 31));
              break;
          }
        }
        narrow(dst);
      });
  stats.alu_steps += steps;
  return model_.pipeline_fill + steps * (l.use_imm || l.reset ? 1 : 2);
}

}  // namespace tessera::vta
