#include "driver/compile.h"

#include "compile/graph_choices.h"
#include "records/apply_history_best.h"
#include "records/log_file.h"

namespace tessera::driver {

build::BuildResult compile(const graph::Graph& model, const target::Target& target, const CompileOptions& options) {
  build::BuildOptions build_options;
  build_options.winograd = options.winograd;
  build_options.keep_layout = options.keep_layout;
  build_options.fuse.depthwise_projection_min_rows = options.fuse_depthwise_rows;
  build_options.warnings = options.warnings;
  if (options.records.empty() && options.loaded_records.empty()) return build::build(model, target, build_options);
  std::vector<records::Record> all = options.loaded_records;
  for (const auto& log : options.records) {
    auto r = records::load_records(log, options.warnings ? *options.warnings : std::cerr);
    all.insert(all.end(), r.begin(), r.end());
  }
  records::ApplyHistoryBest history(all);
  build_options.history = &history;
  build_options.conv_blocks = build::graph_choices(all);
  return build::build(model, target, build_options);
}

}  // namespace tessera::driver
