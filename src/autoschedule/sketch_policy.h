#pragma once
// Ansor's sketch policy for one task: the sketches of its DAG, randomly
// annotated into an initial population, improved by evolutionary search
// guided by a cost model, and the best predicted candidates that were never
// measured handed out for measurement (with a few random ones, eps-greedy,
// so a wrong model still sees new ground).
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autoschedule/cost_model.h"
#include "autoschedule/sketch.h"
#include "autoschedule/sketch_rule.h"
#include "measure/measure_input.h"

namespace tessera::autoschedule {

struct Candidate {
  int sketch = 0;
  SketchParams params;
  schedule::Trace trace;
};

struct EvolutionOptions {
  int population = 256;            // candidates per generation
  int generations = 4;
  double mutation_probability = 0.85;  // a child is a mutation, else a crossover
  double eps_greedy = 0.05;        // share of each batch drawn at random, not by the model
  int measured_seeds = 16;         // best measured candidates in the initial population
};

class SketchPolicy {
 public:
  SketchPolicy(const ir::ComputeDAG& dag, const SketchContext& ctx, CostModel& model, EvolutionOptions options = {},
               uint64_t seed = 0);

  const std::vector<Sketch>& sketches() const { return sketches_; }
  // Up to `n` candidates never measured (nor handed out) before.
  std::vector<Candidate> next_batch(int n);
  // Measurements of candidates (from next_batch, or a resumed log's): the
  // model learns from them, and they are never handed out again.
  void record(const std::vector<Candidate>& candidates, const std::vector<measure::MeasureResult>& results);
  // A trace measured before this policy existed (a resumed log), by its text.
  void mark_measured(const std::string& trace_text) { measured_.insert(trace_text); }
  size_t measured() const { return measured_.size(); }

  // The per-store features of a candidate's lowered kernel; empty when it
  // does not lower. Kept per trace: survivors of a generation and measured
  // candidates were lowered when they were scored.
  const StoreRows& features_of(const schedule::Trace& trace);

 private:
  Candidate make(int sketch, SketchParams params) const;
  Candidate random_candidate();
  std::vector<Candidate> evolve(std::vector<Candidate> population);
  std::vector<float> scores(const std::vector<Candidate>& population);

  ir::ComputeDAG dag_;
  SketchContext ctx_;
  CostModel& model_;
  EvolutionOptions options_;
  std::mt19937_64 rng_;
  std::vector<Sketch> sketches_;
  std::unordered_set<std::string> measured_;  // trace texts
  std::unordered_map<std::string, StoreRows> features_;  // trace text -> features (bounded)
  std::vector<std::pair<double, Candidate>> best_measured_;  // (cost, candidate), fastest first
};

}  // namespace tessera::autoschedule
