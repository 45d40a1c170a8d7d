// The task scheduler on synthetic tasks whose best latency after t trials is
// a known curve: warm-up first, then the gradient rule chooses as written in
// the header, it spends trials where the weighted latency still falls, beats
// round robin at equal trials, stops a task that stopped improving, and
// prints the seed's table.
#include "autoschedule/task_scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

namespace tessera::autoschedule {
namespace {

// best(t) = floor + (start - floor) * exp(-t / tau); no valid schedule before the first round.
class SyntheticTask : public TaskTuner {
 public:
  SyntheticTask(double start, double floor, double tau) : start_(start), floor_(floor), tau_(tau) {}
  void tune_round(int n) override { trials_ += n; }
  double best_cost() const override {
    if (trials_ == 0) return std::numeric_limits<double>::infinity();
    return floor_ + (start_ - floor_) * std::exp(-static_cast<double>(trials_) / tau_);
  }
  int64_t trials() const override { return trials_; }

 private:
  double start_, floor_, tau_;
  int64_t trials_ = 0;
};

TaskSchedulerOptions options(TaskSchedulerStrategy s, int64_t total) {
  TaskSchedulerOptions o;
  o.strategy = s;
  o.total_trials = total;
  o.trials_per_round = 16;
  o.eps_random = 0;
  return o;
}

TEST(TaskScheduler, WarmsUpEveryTaskFirst) {
  SyntheticTask a(1e-3, 1e-4, 500), b(1e-3, 1e-4, 500), c(1e-3, 1e-4, 500);
  TaskScheduler s({{&a, 1, 1e9, "x"}, {&b, 1, 1e9, "y"}, {&c, 1, 1e9, "z"}},
                  options(TaskSchedulerStrategy::Gradient, 48));
  std::ostringstream out;
  s.tune(out);
  EXPECT_EQ(a.trials(), 16);
  EXPECT_EQ(b.trials(), 16);
  EXPECT_EQ(c.trials(), 16);
}

TEST(TaskScheduler, ChoosesTheMostNegativeGradient) {
  // After warm-up (one round each, no backward window yet), the forward term
  // is -g (the first round "gained" everything): gradient = -w (1 - alpha) g.
  SyntheticTask a(2e-3, 1e-4, 1e9), b(1e-3, 1e-4, 1e9);
  a.tune_round(16);
  b.tune_round(16);
  TaskScheduler s({{&a, 1, 1e9, "x"}, {&b, 3, 1e9, "y"}}, options(TaskSchedulerStrategy::Gradient, 1000));
  // a: -1 * 0.8 * 2e-3 = -1.6e-3; b: -3 * 0.8 * 1e-3 = -2.4e-3.
  EXPECT_EQ(s.next_task(), 1);
  // With the weights equal, the slower task wins.
  SyntheticTask c(2e-3, 1e-4, 1e9), d(1e-3, 1e-4, 1e9);
  c.tune_round(16);
  d.tune_round(16);
  TaskScheduler s2({{&c, 1, 1e9, "x"}, {&d, 1, 1e9, "y"}}, options(TaskSchedulerStrategy::Gradient, 1000));
  EXPECT_EQ(s2.next_task(), 0);
  // Similar tasks bound the forward term: a task as fast per FLOP as its
  // similar task's best (times beta) expects no gain from that term.
  SyntheticTask e(1e-3, 1e-4, 1e9), f(1e-3, 1e-4, 1e9);
  e.tune_round(16);
  f.tune_round(16);
  TaskScheduler s3({{&e, 1, 1e9, "conv"}, {&f, 1, 1e9, "conv"}}, options(TaskSchedulerStrategy::Gradient, 1000));
  const int first = s3.next_task();  // equal gradients: either, at random
  EXPECT_TRUE(first == 0 || first == 1);
}

TEST(TaskScheduler, GradientSpendsTrialsWhereLatencyFallsAndBeatsRoundRobin) {
  // A heavy task that keeps improving, and light tasks that converge at once.
  auto run = [](TaskSchedulerStrategy strategy, std::vector<int64_t>* trials) {
    SyntheticTask heavy(20e-3, 2e-3, 400), light1(1e-3, 0.9e-3, 10), light2(1e-3, 0.9e-3, 10),
        light3(1e-3, 0.9e-3, 10);
    TaskScheduler s({{&heavy, 4, 1e9, "a"}, {&light1, 1, 1e9, "b"}, {&light2, 1, 1e9, "c"}, {&light3, 1, 1e9, "d"}},
                    options(strategy, 640));
    std::ostringstream out;
    s.tune(out);
    *trials = {heavy.trials(), light1.trials(), light2.trials(), light3.trials()};
    return s.estimated_latency();
  };
  std::vector<int64_t> g, r;
  const double gradient = run(TaskSchedulerStrategy::Gradient, &g);
  const double round_robin = run(TaskSchedulerStrategy::RoundRobin, &r);
  EXPECT_EQ(g[0] + g[1] + g[2] + g[3], 640);
  EXPECT_EQ(r[0], 160);  // round robin: equal shares
  EXPECT_GT(g[0], 320) << "the heavy, improving task gets most trials";
  EXPECT_LT(gradient, round_robin);
}

TEST(TaskScheduler, EarlyStoppingEndsAFlatTask) {
  SyntheticTask flat(1e-3, 1e-3, 1), improving(10e-3, 1e-3, 300);
  TaskSchedulerOptions o = options(TaskSchedulerStrategy::RoundRobin, 800);
  o.early_stopping = 64;
  TaskScheduler s({{&flat, 1, 1e9, "a"}, {&improving, 1, 1e9, "b"}}, o);
  std::ostringstream out;
  s.tune(out);
  EXPECT_LE(flat.trials(), 16 + 64 + 16);
  EXPECT_EQ(flat.trials() + improving.trials(), 800);
}

// A task whose rounds take `seconds` each (a slow measurement).
class SlowTask : public SyntheticTask {
 public:
  explicit SlowTask(double seconds) : SyntheticTask(1e-3, 1e-4, 500), seconds_(seconds) {}
  void tune_round(int n) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
    SyntheticTask::tune_round(n);
  }

 private:
  double seconds_;
};

TEST(TaskScheduler, StopsStartingRoundsWhenTheTimeBudgetIsSpent) {
  SlowTask a(0.1), b(0.1);
  TaskSchedulerOptions o = options(TaskSchedulerStrategy::RoundRobin, 100000);
  o.time_budget_min = 0.5 / 60;  // half a second: about five rounds of 0.1 s
  TaskScheduler s({{&a, 1, 1e9, "a"}, {&b, 1, 1e9, "b"}}, o);
  std::ostringstream out;
  s.tune(out);
  const int64_t rounds = (a.trials() + b.trials()) / 16;
  EXPECT_GE(rounds, 2);   // it ran
  EXPECT_LE(rounds, 10);  // and stopped long before its 100000 trials
  EXPECT_NE(out.str().find("time budget of 0.00833333 min spent"), std::string::npos) << out.str();
}

TEST(TaskScheduler, PrintsTheSeedsTable) {
  SyntheticTask a(1e-3, 1e-4, 100), b(2e-3, 1e-4, 100);
  TaskScheduler s({{&a, 1, 2e9, "x"}, {&b, 2, 2e9, "y"}}, options(TaskSchedulerStrategy::Gradient, 32));
  std::ostringstream out;
  s.tune(out);
  const std::string text = out.str();
  EXPECT_NE(text.find("|  ID  | Latency (ms) | Speed (GFLOPS) | Trials |"), std::string::npos) << text;
  EXPECT_NE(text.find("Estimated total latency: "), std::string::npos) << text;
  EXPECT_NE(text.find("Trials: 32"), std::string::npos) << text;
  EXPECT_NE(text.find("Next ID: -1"), std::string::npos) << text;
  ASSERT_EQ(s.history().size(), 2u);
  EXPECT_NEAR(s.history().back().second, s.estimated_latency(), 1e-12);
}

}  // namespace
}  // namespace tessera::autoschedule
