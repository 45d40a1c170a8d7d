// rpc_scaling: measured candidates per second through the RPC tracker with 1
// and with 2 servers, each one slot pinned to its own core, on the same batch
// of one conv2d task's candidates (1-thread kernels). Issue: "expect close to
// 2x, and the same final best".
//
//   rpc_scaling [--candidates 48] [--rounds 3] [--number 2] [--repeat 3] [--min-repeat-ms 50]
//
// The tracker and the servers run in this process, each a thread with its own
// ZeroMQ context, talking over loopback TCP with CURVE, exactly as separate
// processes would. The candidates are built once, before any timing; the
// sides then alternate, a round at a time, and each side's fastest round is
// quoted.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "autotvm/task.h"
#include "measure/builder.h"
#include "rpc/rpc_runner.h"
#include "rpc/security.h"
#include "rpc/server.h"
#include "rpc/tracker.h"
#include "rpc/tracker_client.h"

using namespace tessera;

namespace {

// A tracker or server serving in a thread until destroyed.
template <typename Service>
class Running {
 public:
  template <typename Options>
  explicit Running(Options options) : service_(std::move(options)), thread_([this] { service_.serve(stop_); }) {}
  ~Running() {
    stop_ = true;
    thread_.join();
  }
  Service& service() { return service_; }

 private:
  std::atomic<bool> stop_{false};
  Service service_;
  std::thread thread_;
};

bool wait_for_devices(const std::string& tracker, const rpc::KeyPair& keys, const std::string& key, int64_t n) {
  for (int i = 0; i < 100; ++i) {
    try {
      for (const auto& k : rpc::query_tracker(tracker, keys, 1))
        if (k.key == key && k.free == n) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"RPC runner throughput with 1 and 2 single-core servers"};
  int candidates = 48, rounds = 3, number = 2, repeat = 3, min_repeat_ms = 50;
  app.add_option("--candidates", candidates, "candidates of the batch")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds per side")->capture_default_str();
  app.add_option("--number", number)->capture_default_str();
  app.add_option("--repeat", repeat)->capture_default_str();
  app.add_option("--min-repeat-ms", min_repeat_ms)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (std::thread::hardware_concurrency() < 2) {
    fmt::print("rpc_scaling needs two cores\n");
    return 1;
  }

  // One conv2d task (ResNet-18's 64->64 3x3 layer), 1-thread kernels.
  target::Target target = target::Target::host();
  target.threads = 1;
  ops::OpArgs args;
  args.input = {1, 64, 56, 56};
  args.weight = {64, 64, 3, 3};
  args.pad = 1;
  args.layout = "NCHWc";
  const autotvm::Task task = autotvm::create_task("conv2d", args, target);
  std::mt19937_64 random(1);
  std::set<int64_t> chosen;
  while (static_cast<int>(chosen.size()) < candidates)
    chosen.insert(static_cast<int64_t>(random() % static_cast<uint64_t>(task.space.size())));
  std::vector<measure::MeasureInput> inputs;
  for (int64_t index : chosen) inputs.push_back(task.measure_input(task.space.get(index)));
  measure::LocalBuilder builder(measure::LocalBuilderOptions{.shared_object = true});
  const std::vector<measure::BuildResult> builds = builder.build(inputs);
  const auto built = std::count_if(builds.begin(), builds.end(), [](const auto& b) { return b.error == measure::ErrorKind::None; });
  fmt::print("task: {}\ntarget: {}\n{} candidates, {} built; number {} repeat {} min_repeat_ms {}\n", task.describe(),
             target.str(), inputs.size(), built, number, repeat, min_repeat_ms);

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("tessera-rpc-scaling-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string key_file = (dir / "fleet.key").string();
  rpc::write_key_file(key_file, rpc::generate_key_pair());
  const rpc::KeyPair keys = rpc::read_key_file(key_file);

  Running<rpc::Tracker> tracker(rpc::TrackerOptions{.port = 0, .key_file = key_file});
  while (tracker.service().port() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string address = fmt::format("127.0.0.1:{}", tracker.service().port());
  auto server = [&](const std::string& key, int core) {
    rpc::ServerOptions o;
    o.tracker = address;
    o.key = key;
    o.cores = {core};
    o.key_file = key_file;
    return std::make_unique<Running<rpc::Server>>(o);
  };
  auto one = server("one-server", 0);
  auto two_a = server("two-servers", 0);
  auto two_b = server("two-servers", 1);
  if (!wait_for_devices(address, keys, "one-server", 1) || !wait_for_devices(address, keys, "two-servers", 2)) {
    fmt::print("the servers did not register\n");
    return 1;
  }

  struct Side {
    std::string key;
    std::unique_ptr<rpc::RpcRunner> runner;
    double best_seconds = INFINITY;
    std::vector<double> best_cost;  // per candidate, min over rounds
  };
  std::vector<Side> sides;
  for (const std::string key : {"one-server", "two-servers"}) {
    rpc::RpcRunnerOptions o{.tracker = address, .key = key};
    o.run = {.number = number, .repeat = repeat, .min_repeat_ms = min_repeat_ms, .timeout = 20, .num_threads = 1};
    o.key_file = key_file;
    sides.push_back({key, std::make_unique<rpc::RpcRunner>(o), INFINITY, std::vector<double>(inputs.size(), INFINITY)});
  }
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < sides.size(); ++k) {
      Side& side = sides[(k + static_cast<size_t>(round)) % sides.size()];
      const auto start = std::chrono::steady_clock::now();
      const auto results = side.runner->run(inputs, builds);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      side.best_seconds = std::min(side.best_seconds, seconds);
      for (size_t i = 0; i < results.size(); ++i) side.best_cost[i] = std::min(side.best_cost[i], results[i].rank_cost());
      fmt::print("round {} {:<12} {:6.2f} s  {:5.2f} candidates/s\n", round, side.key, seconds, inputs.size() / seconds);
    }

  fmt::print("\n| side | fastest batch (s) | candidates/s | best candidate | its GFLOPS |\n|---|---|---|---|---|\n");
  for (const Side& side : sides) {
    const size_t best = static_cast<size_t>(std::min_element(side.best_cost.begin(), side.best_cost.end()) - side.best_cost.begin());
    fmt::print("| {} | {:.2f} | {:.2f} | config {} | {:.1f} |\n", side.key, side.best_seconds,
               inputs.size() / side.best_seconds, *std::next(chosen.begin(), static_cast<long>(best)),
               task.flop() / side.best_cost[best] / 1e9);
  }
  fmt::print("speedup, two servers over one: {:.2f}x\n", sides[0].best_seconds / sides[1].best_seconds);
  one.reset();
  two_a.reset();
  two_b.reset();
  std::filesystem::remove_all(dir);
  return 0;
}
