#include "compile/graph_choices.h"

#include "tessera/error.h"

namespace tessera::build {

using graph::ConvBlocks;

std::map<std::string, ConvBlocks> graph_choices(const std::vector<records::Record>& records) {
  std::map<std::string, ConvBlocks> choices;
  for (const records::Record& r : records) {
    // Auto-scheduler records name their nodes too, but choose no blocks.
    if (r.task_name == records::kAutoScheduleTaskName) continue;
    if (!r.workload.is_object() || !r.workload.contains("nodes")) continue;
    const nlohmann::json& args = r.workload.value("args", nlohmann::json::object());
    const ConvBlocks blocks{args.value("ic_bn", int64_t{0}), args.value("oc_bn", int64_t{0})};
    for (const nlohmann::json& node : r.workload.at("nodes")) {
      if (!node.is_string()) throw Error("graph records: a node name that is not a string: " + node.dump());
      auto [it, added] = choices.try_emplace(node.get<std::string>(), blocks);
      if (!added && !(it->second == blocks))
        throw Error("graph records: convolution '" + it->first + "' is given two different channel blocks");
    }
  }
  return choices;
}

}  // namespace tessera::build
