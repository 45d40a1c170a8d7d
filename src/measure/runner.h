#pragma once
// Runners execute built kernels and time them.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "measure/builder.h"
#include "measure/isolated_run.h"
#include "measure/kernel_args.h"
#include "measure/timer.h"

namespace tessera::measure {

class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::vector<MeasureResult> run(const std::vector<MeasureInput>& inputs,
                                         const std::vector<BuildResult>& builds) = 0;
};

// Reference outputs for a DAG, given its inputs (in dag.placeholders() order).
using ReferenceFn = std::function<void(const std::vector<const float*>& inputs, float* output)>;

// What every candidate of one DAG runs on: its inputs and, given a
// reference, the expected first output. LocalRunner makes it once per DAG in
// the parent (the children inherit it through fork); RpcRunner sends its
// shapes and expected output to the device.
KernelArguments kernel_arguments_of(const ir::ComputeDAG& dag, const ReferenceFn& reference);

// Runs every kernel in a forked child process: a crash, an abort or a hang in
// generated code becomes an error result for that candidate only.
class LocalRunner : public Runner {
 public:
  explicit LocalRunner(LocalRunnerOptions options = {}, ReferenceFn reference = nullptr);
  std::vector<MeasureResult> run(const std::vector<MeasureInput>& inputs,
                                 const std::vector<BuildResult>& builds) override;

  // Test-only: called inside the child just before candidate `index` runs, so a
  // test can make it crash or hang.
  void set_fault_hook_for_testing(std::function<void(int index)> hook) { fault_hook_ = std::move(hook); }

 private:
  // The arguments of a DAG, checked against the host's output when GPU
  // candidates are (made once per workload: a compile and a run on the host).
  const KernelArguments& host_checked(const ir::ComputeDAG& dag);

  LocalRunnerOptions options_;
  ReferenceFn reference_;
  std::map<std::string, KernelArguments> host_checked_;  // by workload key
  std::function<void(int)> fault_hook_;
};

// The result of a candidate whose build failed: its error, costs nothing to run.
MeasureResult result_of_failed_build(const BuildResult& build);
// Seconds since the Unix epoch: MeasureResult::timestamp.
double unix_time_now();

// Builds and runs a batch; results in input order, all_cost filled in.
std::vector<MeasureResult> measure_batch(Builder& builder, Runner& runner,
                                         const std::vector<MeasureInput>& inputs);

// Builds a batch once and runs it `rounds` times, each round in a rotated
// order so that no candidate always runs first or last: a slow spell of the
// machine then touches different candidates in different rounds. Returns
// results[round][input], all_cost filled in (the build time counts in round 0).
std::vector<std::vector<MeasureResult>> measure_rounds(Builder& builder, Runner& runner,
                                                       const std::vector<MeasureInput>& inputs, int rounds);

// Input `i`'s rounds as one result whose costs are the rounds' fastest
// repeats (a leader's re-measurement); an error in any round makes it an
// error result.
MeasureResult combine_rounds(const std::vector<std::vector<MeasureResult>>& rounds, size_t i);

}  // namespace tessera::measure
