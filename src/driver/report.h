#pragma once
// `tessera report`'s flow: read the tuning logs, compile (or load) the model
// with their records and profile it on this machine, measure the roofline,
// read the baselines, and render the page (report/html_report.h).
#include <iosfwd>
#include <string>
#include <vector>

namespace tessera::driver {

struct ReportOptions {
  std::vector<std::string> logs;  // tuning logs, read in order; damaged lines are counted on the page
  // A zoo name or .onnx file (compiled here with the logs' records), or a
  // .tsr artifact (profiled as it is); empty: the tuning section only.
  std::string model;
  std::string baseline;  // a benchmark's JSON (bench/network_vs_frameworks.py --json); empty: none
  // The target a model is compiled for and the log is read against; empty:
  // the logs' first target when this host runs it, else the host.
  std::string target;
  int threads = 0;       // a model's threads (0: the target's own)
  int number = 10;       // runs per timing, and profiled runs
  int repeat = 5;        // timings of the whole model
  bool roofline = true;  // measure the machine's peak and bandwidth (a second or two)
  std::string command;   // the command line, written on the page
};

// The page's HTML. Progress goes to `log`. Throws tessera::Error naming the
// input that cannot be read (a log that does not open, a model, a baseline).
std::string make_report(const ReportOptions& options, std::ostream& log);

}  // namespace tessera::driver
