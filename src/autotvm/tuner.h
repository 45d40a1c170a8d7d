#pragma once
// Tuners search a task's config space: they propose batches of configs never
// proposed before, the measure layer turns them into results, and the tuner
// learns from those. One interface for every search strategy.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autotvm/task.h"
#include "measure/runner.h"

namespace tessera::autotvm {

class Tuner;

// Called after every measured batch (progress display, logging to file...),
// after the leaders' re-measurement (Tuner::confirming() is then true), and
// once more with an empty batch when tune() finishes (see callback.h).
using Callback = std::function<void(const Tuner& tuner, const std::vector<ConfigEntity>& configs,
                                    const std::vector<measure::MeasureResult>& results)>;

struct MeasureOption {
  measure::Builder* builder = nullptr;
  measure::Runner* runner = nullptr;
  // Times the leaders at the end (longer runs, see TuneOptions::confirm_leaders);
  // null: `runner`.
  measure::Runner* confirm_runner = nullptr;
};

struct TuneOptions {
  int n_trial = 100;         // configs to measure at most (capped by the space size)
  int early_stopping = 0;    // stop after this many trials without a better config; 0 = never
  int batch_size = 0;        // configs per batch; 0 = the tuner's own choice
  double time_budget_s = 0;  // no new batch starts after this many seconds of tune(); 0 = no limit
  // Set (by a signal handler, another thread) to stop: the batch in flight is
  // dropped unrecorded (its children may have been interrupted too), the
  // leaders are not re-measured, and tune() returns. Null: never stops.
  const std::atomic<bool>* stop = nullptr;
  // A search measurement is short and the machine is noisy, so one lucky or
  // unlucky run can crown the wrong config. At the end, the best
  // `confirm_leaders` configs measured so far (this run's and a resumed log's)
  // are measured again in `confirm_rounds` interleaved rounds and ranked by
  // the median of their per-round times; the best of those is the tuner's
  // best. 0 leaders: the search's fastest single measurement is the best.
  int confirm_leaders = 5;
  int confirm_rounds = 3;
};

class Tuner {
 public:
  explicit Tuner(const Task& task) : task_(task) {}
  virtual ~Tuner() = default;

  // Up to `batch_size` configs that were never proposed before (fewer when the
  // space runs out).
  virtual std::vector<ConfigEntity> next_batch(int batch_size) = 0;
  // Learns from measured configs. The base records the best one.
  virtual void update(const std::vector<ConfigEntity>& configs, const std::vector<measure::MeasureResult>& results);
  virtual bool has_next() const;
  virtual int default_batch_size() const { return 16; }
  // Earlier measurements of this task or of others (transfer learning); the
  // base ignores them.
  virtual void load_history(const std::vector<measure::MeasureInput>& inputs,
                            const std::vector<measure::MeasureResult>& results) {}
  // A config already measured (a resumed run): never proposed again, and a
  // leader candidate and, when fastest so far, the best config when `result`
  // is valid.
  void mark_measured(int64_t index, const measure::MeasureResult& result);

  // Measures batches until n_trial (capped by the space size) trials, the end
  // of the space or early stopping. A config that cannot be instantiated or
  // measured costs its trial as an error result; it never throws.
  void tune(const TuneOptions& options, const MeasureOption& measure, const std::vector<Callback>& callbacks = {});

  const Task& task() const { return task_; }
  int64_t trials() const { return trials_; }           // measured in tune()
  const ConfigEntity& best_config() const { return best_config_; }
  double best_flops() const { return best_flops_; }    // FLOP/s of the best config, 0 if none valid
  // Trial number at which the search found its fastest measurement (what
  // early stopping counts from; the confirmed best may be another leader).
  int64_t best_trial() const { return best_trial_; }
  // True while callbacks see the leaders' re-measurement: one result per
  // leader whose costs are its per-round times (each round's fastest repeat).
  bool confirming() const { return confirming_; }
  // Whether the last tune() ended because TuneOptions::stop was set.
  bool stopped() const { return stopped_; }

 protected:
  bool visited(int64_t index) const { return visited_.count(index) > 0; }
  void visit(int64_t index) { visited_.insert(index); }
  int64_t num_visited() const { return static_cast<int64_t>(visited_.size()); }

  const Task& task_;

 private:
  void note_leader(int64_t index, const measure::MeasureResult& result);
  // True when `result` is the fastest yet: config `index` then becomes the best.
  bool note_best(int64_t index, const measure::MeasureResult& result);
  void confirm_leaders(const TuneOptions& options, const MeasureOption& measure,
                       const std::vector<Callback>& callbacks);

  std::unordered_set<int64_t> visited_;
  std::unordered_map<int64_t, double> leader_cost_;  // index -> fastest measured seconds, valid configs only
  bool confirming_ = false;
  bool stopped_ = false;
  int64_t trials_ = 0;
  ConfigEntity best_config_;
  double best_flops_ = 0;
  int64_t best_trial_ = -1;
};

// How the search times candidates unless told otherwise (`tessera tune`'s
// --number --repeat --min-repeat-ms): repeats of 2 runs, 3 repeats, each
// repeat at least 20 ms.
inline constexpr int kSearchNumber = 2, kSearchRepeat = 3, kSearchMinRepeatMs = 20;
measure::LocalRunnerOptions search_runner_options(int threads);

// How the leaders are timed, given how the search timed candidates: repeats
// of at least 100 ms (five times the search's), as many repeats, and no
// correctness check (the search checked them when asked to).
measure::LocalRunnerOptions confirm_runner_options(measure::LocalRunnerOptions search);

// "random", "gridsearch", "ga", "xgb", "xgb_knob", "xgb_itervar", "xgb_curve",
// "xgb_rank", "xgb_rank_knob", "xgb_rank_itervar", "xgb_rank_curve",
// "xgb_rank_binary", "xgb_rank_binary_knob", "xgb_rank_binary_itervar",
// "xgb_rank_binary_curve". Unknown names throw tessera::Error listing these.
std::unique_ptr<Tuner> make_tuner(const std::string& name, const Task& task, uint64_t seed = 0);
std::vector<std::string> tuner_names();

}  // namespace tessera::autotvm
