#include "report_command.h"

#include <fmt/format.h>

#include <iostream>

#include "flag_checks.h"
#include "support/write_file.h"
#include "target_flags.h"

namespace tessera::cli {

CLI::App* add_report_command(CLI::App& app, ReportCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("report", "one HTML page showing a tuning run and a compiled model, with plots");
  cmd->add_option("logs", o.report.logs, "tuning logs (damaged lines are counted on the page)")->required();
  cmd->add_option("--model", o.report.model,
                  "zoo name or .onnx file (compiled with the logs' records and profiled here), or a .tsr artifact");
  cmd->add_option("--baseline", o.report.baseline,
                  "a benchmark's latencies (bench/network_vs_frameworks.py --json FILE) to show the model's beside");
  add_target_flag(cmd, o.report.target,
                  "target the model is compiled for (default: the logs' own, if this host runs it)");
  cmd->add_option("--threads", o.report.threads, "threads the model runs with (0: its target's)")->check(at_least(0));
  cmd->add_option("--number", o.report.number, "runs per timing, and profiled runs")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--repeat", o.report.repeat, "timings of the whole model")->check(at_least(1))->capture_default_str();
  cmd->add_flag(
      "--no-roofline", [&o](int64_t) { o.report.roofline = false; },
      "do not measure this machine's peak and bandwidth (the roofline then has no ceilings)");
  cmd->add_option("-o,--output", o.output, "the page to write")->capture_default_str();
  return cmd;
}

int run_report(ReportCommandOptions o, int argc, char** argv) {
  std::string command = "tessera";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  o.report.command = command;
  const std::string page = driver::make_report(o.report, std::cerr);
  support::write_file_atomically(o.output, page);
  fmt::print("wrote {} ({} KB)\n", o.output, (page.size() + 1023) / 1024);
  return 0;
}

}  // namespace tessera::cli
