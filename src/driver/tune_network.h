#pragma once
// Tuning a network, the whole flow of seeds 000-003 written once: extract
// the tasks, search each (AutoTVM templates, or the auto-scheduler under its
// task scheduler), optionally the graph tuner over the convolutions' channel
// blocks, then the evaluations: the network compiled with the default
// schedules, with the tuned kernels and with the graph tuner's choice, timed
// in interleaved rounds. `tessera tune`, the jit's max-autotune mode,
// tessera.tune() in Python and tessera::tune() in C++ all call it.
#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "autotvm/tuner.h"
#include "target/target.h"
#include "graph/graph.h"
#include "graph/quantize_network.h"
#include "measure/builder.h"
#include "measure/runner.h"

namespace tessera::driver {

// The CLI's `tune` flags, one to one (the measurement flags become the
// builder and runners, which the CLI makes from --runner).
struct TuneOptions {
  std::string log;                   // --log: the tuning's state, resumed when it exists; required
  std::string search = "templates";  // --search: "templates" (AutoTVM) or "auto" (the auto-scheduler)
  std::string tuner = "xgb";         // --tuner (templates)
  std::string task_scheduler = "gradient";  // --task-scheduler (auto): or "round-robin"
  int trials = 1000;                 // --trials: per task
  int early_stopping = 400;          // --early-stopping: per task; 0: never
  double time_budget_min = 0;        // --time-budget: for all tasks; 0: no limit
  bool transfer_learning = true;     // --no-transfer-learning: false
  bool winograd = true;              // --no-winograd: false
  bool keep_layout = false;          // --keep-layout (auto only)
  std::string dtype = "float32";     // --dtype: float16 tunes the half-storage kernels (auto, GPU targets)
  std::string convolutions = "auto";  // --convolutions: as CompileOptions::convolutions
  std::string graph_tuner;           // --graph-tuner: "", "dp" or "pbqp" (templates)
  std::string graph_log;             // --graph-log: where the graph tuner's choice goes; required with it
  // Tune only the tasks neither the log nor `known` holds a record of (the
  // jit's max-autotune: what earlier runs tuned stays).
  bool only_missing = false;
  std::vector<std::string> known;
  int confirm_leaders = 5, confirm_rounds = 3;  // --confirm-leaders, --confirm-rounds
  uint64_t seed = 0;                            // --seed
  // Where candidates are built and measured; null: a LocalBuilder and
  // LocalRunners on this host, with the target's threads.
  measure::Builder* builder = nullptr;
  measure::Runner* runner = nullptr;
  measure::Runner* confirm_runner = nullptr;
  // Set (by a signal handler) to stop after the batch in flight: every
  // measured record is kept, and the same call resumes.
  const std::atomic<bool>* stop = nullptr;
  // --quantize int8 (and its calibration, as CompileOptions'): the network
  // tuned is the one compile --quantize builds (driver::quantize_model), so
  // compile with the same flags and --records takes the log's records.
  std::string quantize;
  std::string calibrate = "8";
  graph::QuantizeOptions quantization;
  bool evaluate = true;                  // --no-evaluate: false
  int eval_number = 20, eval_repeat = 5;  // --eval-number, --eval-repeat
};

struct TuneResult {
  int tasks = 0;         // extracted
  int tuned = 0;         // tuned in this call
  int already_done = 0;  // the log shows them finished
  int64_t trials = 0;    // measured in this call
  double seconds = 0;
  bool stopped = false;  // options.stop ended it
};

// Progress in the seeds' format goes to `out`, warnings to `warnings`.
// Throws tessera::Error for options that contradict each other, a log that
// cannot be written, or a target that cannot run here (with local runners).
TuneResult tune_network(const graph::Graph& model, const target::Target& target, const TuneOptions& options,
                        std::ostream& out, std::ostream& warnings);

}  // namespace tessera::driver
