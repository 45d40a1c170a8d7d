#include "autoschedule_command.h"

#include <fmt/format.h>

#include <random>

#include "autoschedule/generate_sketches.h"
#include "autoschedule/random_annotation.h"
#include "flag_checks.h"
#include "target_flags.h"

namespace tessera::cli {

AutoscheduleCommands add_autoschedule_commands(CLI::App& app, AutoscheduleCommandOptions& o) {
  AutoscheduleCommands c;
  c.root = app.add_subcommand("autoschedule", "the template-free auto-scheduler");
  c.root->require_subcommand(1);
  c.sketches = c.root->add_subcommand("sketches", "print the sketches of an operator's compute DAG");
  add_operator_flags(c.sketches, o.op);
  c.sketches->add_option("--threads", o.threads, "threads the kernels run with (0: one per core)")
      ->check(at_least(0))
      ->capture_default_str();
  add_target_flag(c.sketches, o.target, "target the sketches are for");
  c.sketches->add_option("--random", o.random, "randomly annotated schedules to print per sketch")
      ->check(at_least(0))
      ->capture_default_str();
  c.sketches->add_option("--seed", o.seed, "random seed")->capture_default_str();
  return c;
}

int run_sketches(const AutoscheduleCommandOptions& o) {
  const target::Target target = resolve_target(o.target, o.threads);
  const ops::Workload w = ops::make_workload(o.op.op, resolve(o.op));
  const autoschedule::SketchContext ctx{target, target.threads};
  fmt::print("{}\n", w.dag.print());
  const auto sketches = autoschedule::generate_sketches(w.dag, ctx);
  std::mt19937_64 rng(o.seed);
  for (size_t i = 0; i < sketches.size(); ++i) {
    fmt::print("========== Sketch {} of {} ==========\n{}", i, sketches.size(), sketches[i].print());
    for (int r = 0; r < o.random; ++r) {
      const auto params = autoschedule::random_params(sketches[i], ctx, rng);
      fmt::print("random {}: {}\n", r, autoschedule::instantiate(sketches[i], params).dump());
    }
  }
  return 0;
}

}  // namespace tessera::cli
