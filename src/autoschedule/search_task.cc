#include "autoschedule/search_task.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <ostream>

#include "codegen/target.h"
#include "records/log_file.h"
#include "records/target_match.h"
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

SearchResult search_task(const SearchTask& task, CostModel& model, const SearchOptions& options,
                         measure::Builder& builder, measure::Runner& runner, std::ostream& out,
                         std::ostream& warnings) {
  if (options.log.empty()) throw Error("auto-scheduler: a tuning log is required");
  if (options.batch_size < 1) throw Error("auto-scheduler: the batch size must be at least 1");
  const SketchContext ctx{task.target, task.target.threads};
  SketchPolicy policy(task.dag, ctx, model, options.evolution, options.seed);
  SearchResult result;
  result.best_cost = std::numeric_limits<double>::infinity();
  const double flop = task.dag.flop_count();
  const std::string key = task.dag.workload_key();

  // Resume: the log's records of this task (same DAG, a matching target) are
  // never measured again, and the model starts from them.
  {
    std::ifstream probe(options.log);
    if (probe) {
      std::vector<Candidate> candidates;
      std::vector<measure::MeasureResult> results;
      records::RecordTargets targets;
      records::for_each_record(options.log, warnings, [&](records::Record&& r) {
        if (r.workload_key != key || r.task_name != kAutoScheduleTaskName) return;
        if (!targets.applies(r, task.target)) return;
        Candidate c;
        c.sketch = -1;  // its params are not known: never an evolution seed
        c.trace = r.trace;
        if (r.valid() && r.result.rank_cost() < result.best_cost) {
          result.best_cost = r.result.rank_cost();
          result.best_trace = r.trace;
        }
        candidates.push_back(std::move(c));
        results.push_back(r.result);
      });
      result.resumed = static_cast<int64_t>(candidates.size());
      if (!candidates.empty()) policy.record(candidates, results);
    }
  }

  records::RecordWriter writer(options.log);
  const auto start = std::chrono::steady_clock::now();
  int64_t last_improvement = 0;
  const int64_t budget = std::max<int64_t>(0, options.n_trial - result.resumed);
  while (result.trials < budget) {
    if (options.stop && options.stop->load()) {
      result.stopped = true;
      break;
    }
    if (options.early_stopping > 0 && result.trials - last_improvement >= options.early_stopping) break;
    const int n = static_cast<int>(std::min<int64_t>(options.batch_size, budget - result.trials));
    const std::vector<Candidate> batch = policy.next_batch(n);
    if (batch.empty()) break;  // the space is exhausted
    std::vector<measure::MeasureInput> inputs;
    for (const auto& c : batch) inputs.push_back(measure::MeasureInput{task.dag, c.trace, task.target});
    const std::vector<measure::MeasureResult> results = measure::measure_batch(builder, runner, inputs);
    if (options.stop && options.stop->load()) {
      result.stopped = true;
      break;
    }
    std::vector<records::Record> recs;
    double batch_best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < batch.size(); ++i) {
      recs.push_back(make_record(task, batch[i].trace, results[i]));
      ++result.trials;
      if (!results[i].valid()) continue;
      const double cost = results[i].rank_cost();
      batch_best = std::min(batch_best, cost);
      if (cost < result.best_cost) {
        result.best_cost = cost;
        result.best_trace = batch[i].trace;
        last_improvement = result.trials;
      }
    }
    writer.append(recs);
    policy.record(batch, results);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto gflops = [&](double cost) { return std::isfinite(cost) ? flop / cost / 1e9 : 0.0; };
    out << fmt::format("[autoschedule {}]  Current/Best: {:7.2f}/{:7.2f} GFLOPS | Progress: ({}/{}) | {:.2f} s\n",
                       task.name, gflops(batch_best), gflops(result.best_cost), result.resumed + result.trials,
                       options.n_trial, seconds)
        << std::flush;
  }
  return result;
}

}  // namespace tessera::autoschedule
