#pragma once
// The VTA accelerator as the runtime sees it: an artifact compiled for
// "--target vta" holds one program per packed kernel (section "vta", JSON:
// VtaCode), and a call of such a kernel runs its program on the simulator
// (vta/simulator.h) against the program's DRAM image: the call's inputs are
// copied in (an int8 residual widened to the 32-bit words an accumulator
// load reads), the program runs, the output is copied out. Each run's
// simulated statistics are kept per call, which is what `--profile` prints:
// the accelerator's time is the simulated cycles, not the host's.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vta/config.h"
#include "vta/isa.h"
#include "vta/program.h"
#include "vta/simulator.h"

namespace tessera::runtime {

struct VtaKernelCode {
  // How a call's buffer moves into (or, for the output, out of) DRAM.
  enum class Transfer { Copy, WidenInt8 };
  struct Argument {
    int64_t offset = 0;        // in the DRAM image
    int64_t stored_bytes = 0;  // of the call's buffer
    Transfer transfer = Transfer::Copy;
  };
  std::string name;  // the kernel's name in the executable graph
  std::vector<vta::Instruction> instructions;
  int64_t dram_bytes = 0;
  int64_t uops_offset = 0;
  std::vector<uint8_t> uops;  // the micro-op kernels, written at uops_offset
  // In the call's order: inputs, then the output (none: a tuning candidate,
  // run for its time only).
  std::vector<Argument> arguments;

  // A program's code under `name`, without arguments (the caller adds them).
  static VtaKernelCode of(std::string name, const vta::Program& program);
  // The DRAM image it starts from: zeros, with the micro-ops in place.
  std::vector<uint8_t> dram_image() const;
};

struct VtaCode {
  vta::VtaConfig config;
  std::vector<VtaKernelCode> kernels;

  nlohmann::json to_json() const;
  // Throws tessera::Error naming `source` (the artifact) for a malformed section.
  static VtaCode from_json(const nlohmann::json& j, const std::string& source);
};

// The simulated seconds of a tuning candidate's program (a VtaCode of one
// kernel, as JSON text: measure/vta_measure.h writes it), run timing-only:
// what a VTA runner reports, in the tuner's process or on an RPC server with
// a vta-sim device. Throws tessera::Error naming `source` when the text is
// not such a program or the program fails.
double simulated_seconds_of_program(const std::string& json_text, const std::string& source);

class VtaDevice {
 public:
  explicit VtaDevice(VtaCode code);

  // The kernel's index, or -1 when the artifact's VTA code has none of that name.
  int kernel_index(const std::string& name) const;
  const VtaKernelCode& kernel(int index) const { return code_.kernels.at(index); }
  const vta::VtaConfig& config() const { return code_.config; }
  // Runs kernel `index` on the call's buffers (`args`: inputs then output,
  // as the executable graph's call lists them) and returns what the
  // simulator counted. Throws tessera::Error naming the kernel when the
  // program fails (it never should: the compiler checked it).
  vta::SimulationStats run(int index, void* const* args);

 private:
  VtaCode code_;
  vta::Simulator simulator_;
  std::vector<std::vector<uint8_t>> dram_;  // per kernel, its image with the micro-ops in place
};

}  // namespace tessera::runtime
