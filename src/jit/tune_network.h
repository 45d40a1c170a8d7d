#pragma once
// Tunes a network's kernels with the AutoTVM templates into a log, on this
// host: the library form of `tessera tune MODEL` (without its RPC runner,
// graph tuner and evaluations), for the Python package's tessera.tune() and
// the jit's max-autotune mode.
#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "autotvm/tune_tasks.h"
#include "codegen/target.h"
#include "graph/graph.h"

namespace tessera::jit {

struct TuneNetworkOptions {
  std::string log;                 // the tuning log (resumed when it exists); required
  std::string tuner = "xgb";
  int trials = 1000;               // per task
  int early_stopping = 400;        // per task; 0: never
  double time_budget_min = 0;      // for all tasks, split by weight x FLOPs; 0: no limit
  bool only_missing = false;       // tune only tasks that neither the log nor `known` holds a record of
  std::vector<std::string> known;  // more logs, for only_missing
  const std::atomic<bool>* stop = nullptr;
};

// Progress (the seed's lines) goes to `out`, warnings to `warnings`.
autotvm::TuneTasksSummary tune_network(const graph::Graph& model, const codegen::Target& target,
                                       const TuneNetworkOptions& options, std::ostream& out, std::ostream& warnings);

}  // namespace tessera::jit
