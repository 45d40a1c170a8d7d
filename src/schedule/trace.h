#pragma once
// A schedule as data: an ordered list of steps (schedule/step.h), replayable
// on a ComputeDAG and serialisable to JSON.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schedule/state.h"

namespace tessera::schedule {

// The most steps a trace may hold (templates write tens, searches hundreds).
inline constexpr size_t kMaxTraceSteps = 4096;
// The largest auto_unroll_max_step a pragma may ask for.
inline constexpr int64_t kMaxAutoUnrollStep = 4096;

void apply(State& state, const Step& step);  // throws tessera::Error naming the step
nlohmann::json to_json(const Step& step);
Step step_from_json(const nlohmann::json& j);  // throws tessera::Error on malformed input

class Trace {
 public:
  Trace() = default;
  explicit Trace(std::vector<Step> steps) : steps_(std::move(steps)) {}

  const std::vector<Step>& steps() const { return steps_; }
  Trace& add(Step s) { steps_.push_back(std::move(s)); return *this; }
  // Convenience builders, in the order users write schedules.
  Trace& split(const std::string& stage, const std::string& iter, std::vector<int64_t> lengths);
  Trace& reorder(const std::string& stage, std::vector<std::string> order);
  Trace& fuse(const std::string& stage, std::vector<std::string> iters);
  Trace& annotate(const std::string& stage, const std::string& iter, Annotation a);
  Trace& parallel(const std::string& stage, const std::string& iter);
  Trace& vectorize(const std::string& stage, const std::string& iter);
  Trace& unroll(const std::string& stage, const std::string& iter);
  Trace& compute_at(const std::string& stage, const std::string& target, const std::string& iter);
  Trace& compute_inline(const std::string& stage);
  Trace& compute_root(const std::string& stage);
  Trace& cache_write(const std::string& stage, const std::string& scope = "");
  Trace& cache_read(const std::string& stage, const std::string& tensor, std::vector<int> layout,
                    const std::string& scope = "", const std::string& dtype = "");
  // An annotate step binding a loop to blockIdx.x|y|z, threadIdx.x|y|z or vthread.
  Trace& bind(const std::string& stage, const std::string& iter, Annotation thread_axis);
  Trace& rfactor(const std::string& stage, const std::string& axis, int64_t factor, bool by_range = false);
  Trace& pragma(const std::string& stage, const std::string& iter, const std::string& p);

  State replay(const ir::ComputeDAG& dag) const;
  nlohmann::json to_json() const;
  static Trace from_json(const nlohmann::json& j);
  std::string dump() const { return to_json().dump(); }
  static Trace parse(const std::string& text);  // throws tessera::Error

 private:
  std::vector<Step> steps_;
};

}  // namespace tessera::schedule
