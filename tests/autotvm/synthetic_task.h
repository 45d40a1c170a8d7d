#pragma once
// A synthetic tuning task for tuner tests: nothing is compiled, the "runner"
// reads each candidate's knob choices back from its schedule and returns a
// cost that is a known function of them, so the optimum is known.
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include "autotvm/tuner.h"
#include "ops/workloads.h"
#include "tessera/error.h"
#include "testing/fake_builder.h"

namespace tessera::autotvm::test {

// Knob k splits loop kAxes[k] of dense's T_dense by an inner length taken
// from kTiles (its first `dims[k]` entries).
const char* const kAxes[] = {"i", "j", "k"};
const int64_t kTiles[] = {1, 2, 4, 8, 16, 32, 64, 3};

// What makes a config bad, so tests can check that bad configs are data.
struct Faults {
  int uninstantiable_knob0 = -1;  // choice of knob 0 whose schedule throws
  int failing_knob1 = -1;         // choice of knob 1 whose run fails
};

// A dense 64x64x64 task whose space has one split knob per loop, built by hand
// (no registered template): `apply` writes the chosen splits into the trace.
class SyntheticTask {
 public:
  SyntheticTask(std::vector<int> dims, std::vector<int> best, Faults faults = {})
      : dims_(std::move(dims)), best_(std::move(best)), faults_(std::make_shared<Faults>(faults)) {
    tmpl_.name = "synthetic_dense.test";
    tmpl_.target_kind = "llvm";
    tmpl_.matches = [](const std::string&, const ops::OpArgs&) { return false; };
    tmpl_.declare = [](const ops::OpArgs& a, const target::Target&) { return a; };
    tmpl_.define_space = [dims = dims_](const ops::Workload&, const target::Target&) { return space_of(dims); };
    tmpl_.apply = [faults = faults_](const ops::Workload&, const target::Target&, const ConfigEntity& config) {
      if (config.choices()[0] == faults->uninstantiable_knob0) throw Error("synthetic: cannot instantiate");
      schedule::Trace trace;
      for (int k = 0; k < 3; ++k) trace.split("T_dense", kAxes[k], {config.value(kAxes[k]).get<int64_t>()});
      return trace;
    };
    task_.op = "dense";
    task_.args.input = {64, 64};
    task_.args.weight = {64, 64};
    task_.workload = ops::dense_workload({64, 64}, {64, 64});
    task_.target = target::Target::host();
    task_.tmpl = &tmpl_;
    task_.space = space_of(dims_);
  }
  SyntheticTask(const SyntheticTask&) = delete;

  const Task& task() const { return task_; }
  int64_t size() const { return task_.space.size(); }
  int64_t best_index() const { return task_.space.from_choices(best_).index(); }
  // Seconds: 0.1 ms at the optimum, more the further a choice is from it.
  double cost(const std::vector<int>& choices) const {
    double d = 0;
    for (size_t k = 0; k < choices.size(); ++k) d += (choices[k] - best_[k]) * (choices[k] - best_[k]);
    return 1e-4 * (1 + d);
  }
  const Faults& faults() const { return *faults_; }

 private:
  static ConfigSpace space_of(const std::vector<int>& dims) {
    ConfigSpace space;
    for (size_t k = 0; k < dims.size(); ++k)
      space.define_knob(kAxes[k], std::vector<nlohmann::json>(kTiles, kTiles + dims[k]));
    return space;
  }

  std::vector<int> dims_, best_;
  std::shared_ptr<Faults> faults_;
  Template tmpl_;
  Task task_;
};

using FakeBuilder = testing::FakeBuilder;

// Decodes the choices from the trace's splits and records every index it
// measures, so tests can see duplicates.
class FakeRunner : public measure::Runner {
 public:
  explicit FakeRunner(const SyntheticTask& t, bool flat = false) : t_(t), flat_(flat) {}
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>&) override {
    std::vector<measure::MeasureResult> results;
    for (const measure::MeasureInput& in : inputs) {
      std::vector<int> choices;
      for (const schedule::Step& step : in.trace.steps()) {
        const auto& split = std::get<schedule::SplitStep>(step);
        choices.push_back(static_cast<int>(std::find(std::begin(kTiles), std::end(kTiles), split.lengths.at(0)) -
                                           std::begin(kTiles)));
      }
      const int64_t index = t_.task().space.from_choices(choices).index();
      measured.push_back(index);
      measure::MeasureResult r;
      r.timestamp = 1.7e9;
      r.all_cost = 0.01;
      if (choices[1] == t_.faults().failing_knob1) {
        r.error = measure::ErrorKind::RuntimeDevice;
        r.error_message = "synthetic: run failed";
      } else {
        auto it = cost_override.find(index);
        r.costs = {it != cost_override.end() ? it->second : flat_ ? 1e-4 : t_.cost(choices)};
      }
      results.push_back(r);
    }
    return results;
  }
  std::vector<int64_t> measured;
  std::map<int64_t, double> cost_override;  // index -> seconds, instead of the synthetic cost

 private:
  const SyntheticTask& t_;
  bool flat_;
};

}  // namespace tessera::autotvm::test
