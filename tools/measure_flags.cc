#include "measure_flags.h"

#include "flag_checks.h"
#include "rpc/rpc_runner.h"
#include "tessera/error.h"

namespace tessera::cli {

void add_measure_flags(CLI::App* cmd, MeasureFlags& o) {
  cmd->add_option("--number", o.number, "runs per measurement")->check(at_least(1))->capture_default_str();
  cmd->add_option("--repeat", o.repeat, "measurements per candidate")->check(at_least(1))->capture_default_str();
  cmd->add_option("--min-repeat-ms", o.min_repeat_ms, "shortest measurement")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--timeout", o.timeout, "seconds per candidate for build and for run")
      ->check(positive_seconds)
      ->capture_default_str();
  cmd->add_flag("--flush-cache", o.flush_cache, "flush the caches before each measurement (the CPU caches; on a GPU its L2): cold-cache timings");
  cmd->add_option("--build-parallel", o.build_parallel, "build workers (0: one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--confirm-leaders", o.confirm_leaders,
                  "best configs re-measured with longer runs at the end; the best of those wins (0: none)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--confirm-rounds", o.confirm_rounds, "interleaved rounds of that re-measurement")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--runner", o.runner, "where candidates run: local, or rpc (the devices of --key behind --tracker)")
      ->check(CLI::IsMember({"local", "rpc"}))
      ->capture_default_str();
  cmd->add_option("--key", o.device_key, "--runner rpc: the device key to measure on (as given to `tessera rpc server --key`)");
  cmd->add_option("--tracker", o.tracker, "--runner rpc: the tracker, HOST:PORT")
      ->check(host_and_port)
      ->capture_default_str();
  cmd->add_option("--priority", o.priority, "--runner rpc: priority of this tuner's device requests (higher first)")
      ->capture_default_str();
  cmd->add_option("--key-file", o.key_file, "--runner rpc: the fleet's key file (default ~/.tessera/rpc.key)");
  cmd->add_option("--device-wait", o.device_wait,
                  "--runner rpc: seconds the tracker may report no live device of the key (or not answer) before "
                  "the waiting candidates fail")
      ->check(positive_seconds)
      ->capture_default_str();
}

measure::LocalBuilderOptions builder_options(const MeasureFlags& o) {
  return measure::LocalBuilderOptions{.timeout = o.timeout, .n_parallel = o.build_parallel, .shared_object = o.remote()};
}

measure::LocalRunnerOptions runner_options(const MeasureFlags& o, int threads, bool check) {
  measure::LocalRunnerOptions run;
  run.number = o.number;
  run.repeat = o.repeat;
  run.min_repeat_ms = o.min_repeat_ms;
  run.timeout = o.timeout;
  run.check_correctness = check;
  run.enable_cpu_cache_flush = o.flush_cache;
  run.num_threads = threads;
  return run;
}

std::unique_ptr<measure::Runner> make_runner(const MeasureFlags& o, const measure::LocalRunnerOptions& options,
                                             measure::ReferenceFn reference) {
  if (!o.remote()) {
    if (!o.device_key.empty()) throw Error("--key " + o.device_key + ": needs --runner rpc");
    return std::make_unique<measure::LocalRunner>(options, std::move(reference));
  }
  if (o.device_key.empty()) throw Error("--runner rpc needs --key, the device key to measure on");
  rpc::RpcRunnerOptions rpc{.tracker = o.tracker, .key = o.device_key, .priority = o.priority, .run = options};
  rpc.key_file = o.key_file;
  rpc.device_wait_timeout = o.device_wait;
  return std::make_unique<rpc::RpcRunner>(rpc, std::move(reference));
}

}  // namespace tessera::cli
