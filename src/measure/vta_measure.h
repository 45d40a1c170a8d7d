#pragma once
// Measuring an accelerator's candidates (MeasureInput::accelerator): the
// builder lowers each config of VTA's conv2d_packed.vta template to a
// program (vta/conv2d_packed.h) and writes it as a file, a runtime::VtaCode
// of one kernel; the runner runs it on the simulator and reports the
// simulated time (cycles at the configuration's clock) as the candidate's
// cost, the seed's "cost = simulated time". The simulator is deterministic,
// so one timing-only run stands for every repeat. A config that does not
// fit the accelerator's buffers fails to build, as an instantiation error.
#include <string>

#include "measure/builder.h"
#include "measure/runner.h"

namespace tessera::measure {

class VtaBuilder : public Builder {
 public:
  // `dir`: where programs go; empty: a fresh temporary directory.
  explicit VtaBuilder(std::string dir = "");
  ~VtaBuilder() override;
  std::vector<BuildResult> build(const std::vector<MeasureInput>& inputs) override;

 private:
  std::string dir_;
  bool owns_dir_ = false;
  int counter_ = 0;
};

// Runs the programs VtaBuilder wrote, in this process (`--runner local`;
// rpc::RpcRunner sends them to servers with a vta-sim device instead).
class VtaRunner : public Runner {
 public:
  explicit VtaRunner(int repeat = 3) : repeat_(repeat) {}
  std::vector<MeasureResult> run(const std::vector<MeasureInput>& inputs,
                                 const std::vector<BuildResult>& builds) override;

 private:
  int repeat_;
};

}  // namespace tessera::measure
