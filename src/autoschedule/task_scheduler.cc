#include "autoschedule/task_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>

#include "tessera/error.h"

namespace tessera::autoschedule {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TaskScheduler::TaskScheduler(std::vector<ScheduledTask> tasks, TaskSchedulerOptions options)
    : tasks_(std::move(tasks)), options_(options), rng_(options.seed) {
  if (tasks_.empty()) throw Error("task scheduler: no task to tune");
  if (options_.trials_per_round < 1) throw Error("task scheduler: at least 1 trial per round");
  for (const auto& t : tasks_)
    if (!t.tuner) throw Error("task scheduler: a task without a tuner");
  curve_.resize(tasks_.size());
  last_improvement_.resize(tasks_.size());
  stalled_.assign(tasks_.size(), false);
  for (size_t i = 0; i < tasks_.size(); ++i) {
    // A resumed task starts from what its log holds.
    const int64_t t = tasks_[i].tuner->trials();
    last_improvement_[i] = t;
    if (t > 0) curve_[i].push_back({t, tasks_[i].tuner->best_cost()});
  }
}

double TaskScheduler::estimated_latency() const {
  double total = 0;
  for (const auto& t : tasks_) total += t.weight * t.tuner->best_cost();
  return total;
}

int64_t TaskScheduler::total_trials() const {
  int64_t n = 0;
  for (const auto& t : tasks_) n += t.tuner->trials();
  return n;
}

bool TaskScheduler::done(size_t i) const {
  const TaskTuner& t = *tasks_[i].tuner;
  if (t.exhausted() || stalled_[i]) return true;
  return options_.early_stopping > 0 && !curve_[i].empty() &&
         t.trials() - last_improvement_[i] >= options_.early_stopping;
}

double TaskScheduler::gradient(size_t i) const {
  const ScheduledTask& task = tasks_[i];
  const double g = task.tuner->best_cost();
  if (!std::isfinite(g)) return -1e30 * task.weight;  // no valid schedule yet: most urgent
  const auto& curve = curve_[i];
  const int window = std::max(1, options_.backward_window);
  double backward = 0;
  if (curve.size() > static_cast<size_t>(window)) {
    const double then = curve[curve.size() - 1 - window].second;
    if (std::isfinite(then)) backward = (g - then) / window;
  }
  const double rounds = std::max<double>(1, static_cast<double>(curve.size()));
  double next = g - g / rounds;
  double best_similar_speed = 0;
  int similar = 0;
  for (const auto& other : tasks_) {
    if (other.tag != task.tag) continue;
    ++similar;
    const double c = other.tuner->best_cost();
    if (std::isfinite(c) && c > 0) best_similar_speed = std::max(best_similar_speed, other.flop / c);
  }
  if (similar > 1 && best_similar_speed > 0) next = std::min(next, options_.beta * task.flop / best_similar_speed);
  const double forward = next - g;
  return task.weight * (options_.alpha * backward + (1 - options_.alpha) * forward);
}

int TaskScheduler::next_task() {
  std::vector<size_t> alive;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (!done(i)) alive.push_back(i);
  if (alive.empty()) return -1;
  // Warm-up: every task gets a round before any gets a second.
  for (size_t i : alive)
    if (curve_[i].empty()) return static_cast<int>(i);
  if (options_.strategy == TaskSchedulerStrategy::RoundRobin) {
    // The alive task that has had the fewest trials, the first on ties.
    size_t best = alive.front();
    for (size_t i : alive)
      if (tasks_[i].tuner->trials() < tasks_[best].tuner->trials()) best = i;
    return static_cast<int>(best);
  }
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto random_alive = [&] { return static_cast<int>(alive[std::uniform_int_distribution<size_t>(0, alive.size() - 1)(rng_)]); };
  if (u(rng_) < options_.eps_random) return random_alive();
  std::vector<double> g;
  for (size_t i : alive) g.push_back(gradient(i));
  const auto [lo, hi] = std::minmax_element(g.begin(), g.end());
  if (*lo == *hi) return random_alive();
  return static_cast<int>(alive[lo - g.begin()]);
}

void TaskScheduler::print_table(std::ostream& out, int next) const {
  const std::string rule(49, '-');
  out << "|  ID  | Latency (ms) | Speed (GFLOPS) | Trials |\n" << rule << "\n";
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const double c = tasks_[i].tuner->best_cost();
    const bool valid = std::isfinite(c) && c > 0;
    out << fmt::format("| {:4d} | {:>12} | {:>14} | {:6d} |\n", i, valid ? fmt::format("{:.3f}", c * 1e3) : "-",
                       valid ? fmt::format("{:.2f}", tasks_[i].flop / c / 1e9) : "-", tasks_[i].tuner->trials());
  }
  const double latency = estimated_latency();
  const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  out << rule << "\n"
      << fmt::format("Estimated total latency: {} ms\tTrials: {}\tUsed time : {:.0f} s\tNext ID: {}\n",
                     std::isfinite(latency) ? fmt::format("{:.3f}", latency * 1e3) : "-", total_trials(), used,
                     next)
      << std::flush;
}

void TaskScheduler::tune(std::ostream& out) {
  start_ = std::chrono::steady_clock::now();
  int next = next_task();
  while (next >= 0 && total_trials() < options_.total_trials) {
    if (options_.stop && options_.stop->load()) break;
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start_;
    if (options_.time_budget_min > 0 && spent.count() >= options_.time_budget_min * 60) {
      out << fmt::format("time budget of {:g} min spent after {} trials\n", options_.time_budget_min, total_trials());
      break;
    }
    const size_t i = static_cast<size_t>(next);
    TaskTuner& tuner = *tasks_[i].tuner;
    const int64_t before = tuner.trials();
    const double previous = tuner.best_cost();
    const int n = static_cast<int>(std::min<int64_t>(options_.trials_per_round, options_.total_trials - total_trials()));
    tuner.tune_round(n);
    if (options_.stop && options_.stop->load()) break;
    if (tuner.best_cost() < previous) last_improvement_[i] = tuner.trials();
    curve_[i].push_back({tuner.trials(), tuner.best_cost()});
    history_.push_back({total_trials(), estimated_latency()});
    // A round that measured nothing would be chosen again forever: that task is done.
    if (tuner.trials() == before) stalled_[i] = true;
    next = total_trials() < options_.total_trials ? next_task() : -1;
    print_table(out, next);
  }
}

}  // namespace tessera::autoschedule
