#pragma once
// A behavioural simulator of VTA: executes an instruction stream (isa.h)
// bit-exactly against DRAM, counts the bytes each module moves and the
// operations it does, and estimates cycles with the model below, in which
// the load, compute and store modules overlap as far as their dependency
// tokens allow.
//
// Cycle model (per instruction, from when its module is free and the tokens
// it pops have been pushed):
//   LOAD / STORE: kDmaSetup + kRowSetup per row + ceil(bytes / kBusBytes) for
//                 the elements moved, + 1 per padding element written (a LOAD
//                 writes zeros at one element a cycle);
//   GEMM:         kPipelineFill + one cycle per micro-op step (the core takes
//                 one batch x block_in by block_out x block_in tile product a
//                 cycle);
//   ALU:          kPipelineFill + per step one cycle with an immediate, two
//                 reading a second accumulator tile;
//   FINISH:       one cycle.
// The constants describe a 64-bit DRAM bus at the core's clock (the PYNQ
// board's AXI port) and short pipelines; they are the model's, to be
// compared with the cycle-accurate simulator's published counts, not taken
// from it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vta/config.h"
#include "vta/isa.h"

namespace tessera::vta {

struct CycleModel {
  int64_t dma_setup = 32;     // a LOAD or STORE's request to the first beat
  int64_t row_setup = 4;      // each further row of a 2-D block
  int64_t bus_bytes = 8;      // bytes a cycle on the DRAM bus
  int64_t pipeline_fill = 4;  // GEMM and ALU before their first step retires
};

struct ModuleStats {
  int64_t instructions = 0;
  int64_t busy_cycles = 0;  // cycles executing (not waiting for tokens)
  int64_t end_cycle = 0;    // when its last instruction ended
};

struct SimulationStats {
  int64_t cycles = 0;  // the whole program: the last module's end
  ModuleStats load, compute, store;
  std::map<BufferId, int64_t> bytes_loaded;  // by destination buffer
  int64_t bytes_stored = 0;
  int64_t gemm_steps = 0;   // tile products
  int64_t gemm_macs = 0;    // multiply-accumulates
  int64_t alu_steps = 0;    // accumulator tiles an ALU instruction went over
  int64_t gemm_cycles = 0;  // cycles the GEMM core computed (its steps)

  // The fraction of all cycles in which the GEMM core retired a tile product.
  double gemm_utilisation() const { return cycles > 0 ? double(gemm_cycles) / double(cycles) : 0; }
};

// Functional: computes every value, as the device would. TimingOnly: the
// same instructions, checks and statistics, but only micro-ops are loaded
// and nothing is computed or stored: a tuner's cost (cycles do not depend
// on the values) at a small fraction of the time.
enum class Execution { Functional, TimingOnly };

class Simulator {
 public:
  explicit Simulator(VtaConfig config, CycleModel model = {});

  // Runs `program` on `dram` (bytes; a LOAD or STORE of a buffer addresses
  // elements of that buffer's size: element e starts at byte e x size) and
  // returns its statistics. Buffers keep their contents between runs.
  // Throws tessera::Error naming the instruction for a field out of range,
  // an access outside DRAM or a buffer, or a token never pushed (the
  // program would hang on the device).
  SimulationStats run(const std::vector<Instruction>& program, std::vector<uint8_t>& dram,
                      Execution execution = Execution::Functional);

  const VtaConfig& config() const { return config_; }
  // The accumulator buffer's tile `index` (batch x block_out int32), for tests.
  std::vector<int32_t> accumulator(int64_t index) const;

 private:
  int64_t execute(const Instruction& insn, size_t index, std::vector<uint8_t>& dram, SimulationStats& stats);
  int64_t load(const Instruction& insn, size_t index, const std::vector<uint8_t>& dram, SimulationStats& stats);
  int64_t store(const Instruction& insn, size_t index, std::vector<uint8_t>& dram, SimulationStats& stats);
  int64_t gemm(const Instruction& insn, size_t index, SimulationStats& stats);
  int64_t alu(const Instruction& insn, size_t index, SimulationStats& stats);
  void narrow(int64_t acc_index);  // acc tile -> out tile

  VtaConfig config_;
  CycleModel model_;
  bool functional_ = true;
  std::vector<Uop> uop_;
  std::vector<int8_t> inp_, wgt_, out_;
  std::vector<int32_t> acc_;
};

}  // namespace tessera::vta
