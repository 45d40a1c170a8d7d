#pragma once
// `tessera report`'s page: one self-contained HTML file (inline SVG charts
// and tables, no script, nothing fetched) showing a tuning run, a compiled
// model's profile against the machine's roofline, and the latency next to
// the baselines a benchmark measured. Every number drawn is also in a JSON
// block (<script type="application/json" id="tessera-report">) so that
// tools and tests read the page back without scraping it.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/machine_peak.h"
#include "report/model_profile.h"
#include "report/tuning_history.h"

namespace tessera::report {

// Latencies a benchmark measured (bench/network_vs_frameworks.py --json):
// {"host": ..., "versions": {"onnxruntime": "1.20.1", ...},
//  "rows": [{"model": "resnet-18", "threads": 1, "side": "onnxruntime", "min_ms": 8.1, "median_ms": 8.3}, ...]}
struct BaselineRow {
  std::string model, side;
  int threads = 0;
  double min_ms = 0, median_ms = 0;
};
struct Baselines {
  std::string path, host;
  std::map<std::string, std::string> versions;
  std::vector<BaselineRow> rows;
};
// Throws tessera::Error naming `path` and what is wrong with it.
Baselines read_baselines(const std::string& path);

struct ReportInput {
  TuningHistory tuning;
  std::optional<ModelProfile> model;
  std::optional<MachinePeak> peak;  // the roofline's ceilings; none: the roofline shows the kernels only
  std::optional<Baselines> baselines;
  std::string model_name;  // how the baselines name the model ("resnet-18"); empty: from model->source
  std::string target;      // the target the report is for (Target::str()); empty: the log's own
  std::string host;        // this machine's CPU, for the page's header
  std::string command;     // the command line that made the page
};

// The page. Tasks of the log whose target is not `target` are named as such.
std::string render_report(const ReportInput& input);

// Where the build came from, for the page's header: the commit the build was
// configured at and the LLVM it links.
std::string tessera_version();

}  // namespace tessera::report
