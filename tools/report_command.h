#pragma once
// tessera report LOG... [--model MODEL|m.tsr] [--baseline b.json] [--target T] [--threads N] -o report.html
//
// One self-contained HTML page (report/html_report.h): the tuning run of the
// logs (per task convergence, spread, errors, confirmed leaders; the task
// scheduler's estimate and trials per task), the model's kernels against this
// machine's roofline, and its latency next to a benchmark's baselines.
#include <CLI/CLI.hpp>

#include "driver/report.h"

namespace tessera::cli {

struct ReportCommandOptions {
  driver::ReportOptions report;
  std::string output = "report.html";
};

CLI::App* add_report_command(CLI::App& app, ReportCommandOptions& o);
int run_report(ReportCommandOptions o, int argc, char** argv);

}  // namespace tessera::cli
