#include "autotvm/callback.h"

#include "autotvm/history.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "records/log_file.h"

namespace tessera::autotvm {

namespace {

bool is_terminal(const std::ostream& out) {
  if (&out == &std::cout) return isatty(STDOUT_FILENO) == 1;
  if (&out == &std::cerr || &out == &std::clog) return isatty(STDERR_FILENO) == 1;
  return false;
}

struct ProgressState {
  int total = 0;
  std::string prefix;
  std::ostream* out = nullptr;
  bool terminal = false;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t done = 0;          // trials seen
  double current_flops = 0;  // of the last valid config
  size_t last_width = 0;     // of the line on screen, to blank what a shorter one leaves

  void print(const Tuner& tuner, bool finished) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string line = fmt::format("{} Current/Best: {:7.2f}/{:7.2f} GFLOPS | Progress: ({}/{}) | {:.2f} s", prefix,
                                   current_flops / 1e9, tuner.best_flops() / 1e9, done, total, elapsed);
    if (finished) {
      line += " Done.";
    } else {
      const double left = std::max<int64_t>(total - done, 0) * (done > 0 ? elapsed / done : 0.0);
      line += fmt::format(" | ETA {:.0f} s", left);
    }
    if (terminal) {
      const size_t width = line.size();
      if (width < last_width) line.append(last_width - width, ' ');
      last_width = width;
      *out << '\r' << line;
      if (finished) *out << '\n';
    } else {
      *out << line << '\n';
    }
    out->flush();
  }
};

// Record::to_json_line refuses non-finite numbers: a cost that is not finite
// is no measurement.
measure::MeasureResult loggable(measure::MeasureResult r) {
  std::erase_if(r.costs, [](double c) { return !std::isfinite(c); });
  if (r.costs.empty() && r.error == measure::ErrorKind::None) {
    r.error = measure::ErrorKind::Unknown;
    r.error_message = "no finite cost";
  }
  if (!std::isfinite(r.all_cost)) r.all_cost = 0;
  if (!std::isfinite(r.timestamp)) r.timestamp = 0;
  return r;
}

}  // namespace

Callback progress_bar(int total_trials, std::string prefix, std::ostream& out) {
  auto state = std::make_shared<ProgressState>();
  state->total = total_trials;
  state->prefix = std::move(prefix);
  state->out = &out;
  state->terminal = is_terminal(out);
  return [state](const Tuner& tuner, const std::vector<ConfigEntity>& configs,
                 const std::vector<measure::MeasureResult>& results) {
    if (configs.empty()) {
      state->print(tuner, /*finished=*/true);
      return;
    }
    if (tuner.confirming()) return;  // no trials; the final line shows the confirmed best
    for (const measure::MeasureResult& r : results) {
      ++state->done;
      if (r.valid()) state->current_flops = tuner.task().flop() / r.rank_cost();
    }
    state->print(tuner, /*finished=*/false);
  };
}

Callback log_to_file(const std::string& path, std::vector<records::Record>* written) {
  auto writer = std::make_shared<records::RecordWriter>(path);
  return [writer, written](const Tuner& tuner, const std::vector<ConfigEntity>& configs,
                           const std::vector<measure::MeasureResult>& results) {
    if (configs.empty()) return;
    const Task& task = tuner.task();
    std::vector<records::Record> batch;
    for (size_t i = 0; i < configs.size() && i < results.size(); ++i) {
      batch.push_back(make_record(task, configs[i], loggable(results[i])));
      batch.back().confirmed = tuner.confirming();
    }
    writer->append(batch);
    if (written) written->insert(written->end(), batch.begin(), batch.end());
  };
}

}  // namespace tessera::autotvm
