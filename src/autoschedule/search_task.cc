#include "autoschedule/search_task.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <ostream>

#include "autoschedule/tensor_core_fallback.h"
#include "records/log_file.h"
#include "records/target_match.h"
#include "target/target.h"
#include "tessera/error.h"

namespace tessera::autoschedule {

namespace {

records::Record make_record(const SearchTask& task, const schedule::Trace& trace, const measure::MeasureResult& r) {
  records::Record rec;
  rec.workload_key = task.dag.workload_key();
  rec.task_name = kAutoScheduleTaskName;
  rec.workload = task.workload;
  rec.target = task.target.str();
  rec.trace = trace;
  rec.result = r;
  return rec;
}

}  // namespace

TaskSearch::TaskSearch(const SearchTask& task, CostModel& model, const SearchOptions& options,
                       measure::Builder& builder, measure::Runner& runner, records::RecordWriter& writer,
                       std::ostream* progress)
    : task_(task),
      options_(options),
      policy_(task.dag, SketchContext{task.target, task.target.threads}, model, options.evolution, options.seed),
      builder_(builder),
      runner_(runner),
      writer_(writer),
      progress_(progress),
      best_cost_(std::numeric_limits<double>::infinity()),
      untuned_(untuned_schedule(task.dag, task.target)) {}

int64_t TaskSearch::resume(const std::vector<records::Record>& log) {
  const std::string key = task_.dag.workload_key();
  records::RecordTargets targets;
  std::vector<Candidate> candidates;
  std::vector<measure::MeasureResult> results;
  bool confirmed_best = false;
  const std::string untuned = untuned_.dump();
  for (const auto& r : log) {
    if (r.workload_key != key || r.task_name != kAutoScheduleTaskName || !targets.applies(r, task_.target)) continue;
    if (r.confirmed) {
      // A re-measurement, not a trial: its median outranks the search's costs.
      confirmed_ = true;
      if (r.valid() && (!confirmed_best || r.result.rank_cost() < best_cost_)) {
        best_cost_ = r.result.rank_cost();
        best_trace_ = r.trace;
        confirmed_best = true;
      }
      continue;
    }
    if (r.valid()) note_result(r.trace, r.result.rank_cost());
    if (r.trace.dump() == untuned) untuned_measured_ = true;
    Candidate c;
    c.sketch = -1;  // its params are not known: never an evolution seed
    c.trace = r.trace;
    if (!confirmed_best && r.valid() && r.result.rank_cost() < best_cost_) {
      best_cost_ = r.result.rank_cost();
      best_trace_ = r.trace;
    }
    candidates.push_back(std::move(c));
    results.push_back(r.result);
  }
  resumed_ += static_cast<int64_t>(candidates.size());
  last_improvement_ = trials();
  if (!candidates.empty()) policy_.record(candidates, results);
  return static_cast<int64_t>(candidates.size());
}

void TaskSearch::tune_round(int n) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Candidate> batch;
  if (!untuned_measured_ && n > 0) {
    Candidate c;
    c.sketch = -1;  // no sketch's params: never an evolution seed
    c.trace = untuned_;
    batch.push_back(std::move(c));
    untuned_measured_ = true;
  }
  for (Candidate& c : policy_.next_batch(n - static_cast<int>(batch.size()))) batch.push_back(std::move(c));
  if (batch.empty()) {
    exhausted_ = true;
    return;
  }
  std::vector<measure::MeasureInput> inputs;
  for (const auto& c : batch) inputs.push_back(measure::MeasureInput{task_.dag, c.trace, task_.target});
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  phases_.choosing += since(start);
  const auto build_start = std::chrono::steady_clock::now();
  const std::vector<measure::BuildResult> builds = builder_.build(inputs);
  phases_.building += since(build_start);
  const auto run_start = std::chrono::steady_clock::now();
  const std::vector<measure::MeasureResult> results = runner_.run(inputs, builds);
  phases_.measuring += since(run_start);
  if (options_.stop && options_.stop->load()) {
    stopped_ = true;  // the batch may have been interrupted: it is not recorded
    return;
  }
  std::vector<records::Record> recs;
  double batch_best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < batch.size(); ++i) {
    recs.push_back(make_record(task_, batch[i].trace, results[i]));
    ++measured_;
    if (!results[i].valid()) continue;
    const double cost = results[i].rank_cost();
    note_result(batch[i].trace, cost);
    batch_best = std::min(batch_best, cost);
    if (cost < best_cost_) {
      best_cost_ = cost;
      best_trace_ = batch[i].trace;
      last_improvement_ = trials();
    }
  }
  writer_.append(recs);
  policy_.record(batch, results);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!progress_) return;
  const double flop = task_.dag.flop_count();
  auto gflops = [&](double cost) { return std::isfinite(cost) ? flop / cost / 1e9 : 0.0; };
  *progress_ << fmt::format("[autoschedule {}]  Current/Best: {:7.2f}/{:7.2f} GFLOPS | Progress: ({}/{}) | {:.2f} s\n",
                            task_.name, gflops(batch_best), gflops(best_cost_), trials(), options_.n_trial, seconds_)
             << std::flush;
}

void TaskSearch::note_result(const schedule::Trace& trace, double cost) {
  constexpr size_t kLeadersKept = 16;
  leaders_.emplace_back(cost, trace);
  std::stable_sort(leaders_.begin(), leaders_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (leaders_.size() > kLeadersKept) leaders_.resize(kLeadersKept);
}

void TaskSearch::confirm_leaders() {
  if ((confirmed_ && measured_ == 0) || options_.confirm_leaders <= 0 || options_.confirm_rounds <= 0 || leaders_.empty()) return;
  std::vector<schedule::Trace> traces;
  std::vector<measure::MeasureInput> inputs;
  for (size_t i = 0; i < leaders_.size() && static_cast<int>(i) < options_.confirm_leaders; ++i) {
    traces.push_back(leaders_[i].second);
    inputs.push_back(measure::MeasureInput{task_.dag, leaders_[i].second, task_.target});
  }
  measure::Runner& runner = options_.confirm_runner ? *options_.confirm_runner : runner_;
  const auto rounds = measure::measure_rounds(builder_, runner, inputs, options_.confirm_rounds);
  if (options_.stop && options_.stop->load()) {
    stopped_ = true;
    return;
  }
  std::vector<records::Record> recs;
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < traces.size(); ++i) {
    records::Record rec = make_record(task_, traces[i], measure::combine_rounds(rounds, i));
    rec.confirmed = true;
    if (rec.valid() && rec.result.rank_cost() < best) {
      best = rec.result.rank_cost();
      best_trace_ = traces[i];
    }
    recs.push_back(std::move(rec));
  }
  writer_.append(recs);
  if (std::isfinite(best)) best_cost_ = best;
  confirmed_ = true;
}

SearchResult search_task(const SearchTask& task, CostModel& model, const SearchOptions& options,
                         measure::Builder& builder, measure::Runner& runner, std::ostream& out,
                         std::ostream& warnings) {
  if (options.log.empty()) throw Error("auto-scheduler: a tuning log is required");
  if (options.batch_size < 1) throw Error("auto-scheduler: the batch size must be at least 1");
  std::vector<records::Record> log;
  if (std::ifstream(options.log)) log = records::load_records(options.log, warnings);
  records::RecordWriter writer(options.log);
  TaskSearch search(task, model, options, builder, runner, writer, &out);
  search.resume(log);
  while (search.trials() < options.n_trial && !search.exhausted()) {
    if (options.stop && options.stop->load()) break;
    if (options.early_stopping > 0 && search.trials() - search.last_improvement() >= options.early_stopping) break;
    search.tune_round(static_cast<int>(std::min<int64_t>(options.batch_size, options.n_trial - search.trials())));
    if (search.stopped()) break;
  }
  if (!search.stopped() && !(options.stop && options.stop->load())) search.confirm_leaders();
  SearchResult r;
  r.trials = search.measured();
  r.resumed = search.resumed();
  r.best_cost = search.best_cost();
  r.best_trace = search.best_trace();
  r.stopped = search.stopped() || (options.stop && options.stop->load());
  return r;
}

}  // namespace tessera::autoschedule
