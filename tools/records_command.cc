#include "records_command.h"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>

#include "records/log_file.h"
#include "records/pick_best.h"
#include "records/shipped.h"
#include "records/target_match.h"
#include "target_flags.h"

namespace tessera::cli {

CLI::App* add_records_command(CLI::App& app, RecordsCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("records", "inspect and reduce tuning logs");
  cmd->require_subcommand(1);
  CLI::App* pick = cmd->add_subcommand("pick-best", "keep the best valid record of every task and target");
  pick->add_option("in", o.in, "tuning log to read")->required();
  pick->add_option("out", o.out, "file to write (replaced)")->required();
  add_target_flag(pick, o.target, "keep only records of this target");
  // Seed 001's name for the same reduction (distill_record_file).
  CLI::App* distill = cmd->add_subcommand("distill", "the same as pick-best: the best record of every workload");
  distill->add_option("in", o.in, "tuning log to read")->required();
  distill->add_option("out", o.out, "file to write (replaced)")->required();
  add_target_flag(distill, o.target, "keep only records of this target");
  CLI::App* show = cmd->add_subcommand("show", "one line per record");
  show->add_option("file", o.show, "tuning log")->required();
  add_target_flag(show, o.target, "show only records of this target");
  CLI::App* shipped = cmd->add_subcommand("shipped", "the pre-tuned records shipped with Tessera, log by log");
  add_target_flag(shipped, o.target, "also say how many apply to this target (and which compile uses)");
  return cmd;
}

namespace {

int list_shipped(const std::optional<target::Target>& target) {
  const std::string dir = records::shipped_records_dir();
  const std::vector<records::ShippedLog> logs = records::list_shipped(dir, std::cerr);
  fmt::print("pre-tuned records shipped in {}: {} logs\n", dir.empty() ? "(none)" : dir, logs.size());
  for (const records::ShippedLog& l : logs)
    fmt::print("  {}: {} records for {}{}\n", std::filesystem::path(l.path).filename().string(), l.records,
               fmt::join(l.targets, "; "),
               l.cpus.empty() ? "" : fmt::format(" (tuned on {})", fmt::join(l.cpus, ", ")));
  if (target) {
    const records::ShippedRecords r = records::shipped_records_for(dir, *target, std::cerr);
    fmt::print("{} of them apply to '{}'{}\n", r.records.size(), target->match_key(),
               r.records.empty() ? "" : ": compile without --records uses them (" + r.sources() + ")");
  }
  return 0;
}

}  // namespace

int run_records(CLI::App& records_cmd, const RecordsCommandOptions& o) {
  std::optional<target::Target> target;
  if (!o.target.empty()) target = parse_target_flag(o.target);
  if (records_cmd.got_subcommand("shipped")) return list_shipped(target);
  if (records_cmd.got_subcommand("pick-best") || records_cmd.got_subcommand("distill")) {
    size_t n = records::pick_best_file(o.in, o.out, std::cerr, target);
    fmt::print("{}: {} best records written to {}\n", o.in, n, o.out);
    return 0;
  }
  size_t line = 0;
  records::RecordTargets targets;
  records::for_each_record(o.show, std::cerr, [&](records::Record&& r) {
    ++line;
    if (target && !targets.applies(r, *target)) return;
    // The cost every ranking uses (MeasureResult::rank_cost); "-" for a record that cannot be ranked.
    fmt::print("{:5} {} {} config={} {} median {} ms on {}{}\n", line, r.task_name, r.workload_key.substr(0, 8),
               r.config_index ? std::to_string(*r.config_index) : "-", measure::to_string(r.result.error),
               r.valid() ? fmt::format("{:.3f}", r.result.rank_cost() * 1e3) : "-", targets.match_key(r),
               r.confirmed ? " (confirmed)" : "");
  });
  return 0;
}

}  // namespace tessera::cli
