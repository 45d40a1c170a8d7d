#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>

#include "report/svg_chart.h"
#include "support/read_file.h"
#include "target/target.h"
#include "tessera/error.h"

#ifndef TESSERA_REVISION
#define TESSERA_REVISION "unknown"
#endif
#ifndef TESSERA_LLVM_VERSION
#define TESSERA_LLVM_VERSION "unknown"
#endif

namespace tessera::report {

using nlohmann::json;

namespace {

constexpr size_t kShareBars = 15;  // the slowest kernels drawn; the table lists them all

const char* const kStyle = R"(
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1180px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin-bottom: 4px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
td, th { border: 1px solid #ddd; padding: 3px 6px; text-align: right; }
td.text, th.text { text-align: left; }
.note { background: #fff4e5; border: 1px solid #e69f00; padding: 6px 10px; margin: 8px 0; }
.meta { font-size: 12px; color: #555; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.task { border-top: 1px dashed #ccc; margin-top: 12px; }
)";

std::string h(const std::string& s) { return escape_xml(s); }

// A number for a table cell: "-" when there is none; `digits` decimals, or
// as many significant digits for a small one (a 4 us kernel is 0.00412 ms).
std::string cell(double v, int digits = 3) {
  if (!std::isfinite(v) || v == 0) return "-";
  if (std::fabs(v) < 1) return fmt::format("{:.{}g}", v, digits);
  return fmt::format("{:.{}f}", v, digits);
}

std::string plural(size_t n, const std::string& word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

double finite_or_null(double v) { return std::isfinite(v) ? v : -1; }

// Whether the log's records of `task` apply to the report's target.
bool applies(const TaskHistory& task, const std::optional<target::Target>& wanted) {
  if (!wanted) return true;
  try {
    return target::same_code_target(target::Target::parse(task.target_text), *wanted);
  } catch (const std::exception&) {
    return false;
  }
}

std::string tuning_section(const ReportInput& in, const std::optional<target::Target>& wanted, json& data) {
  const TuningHistory& t = in.tuning;
  std::string out = "<h2 id=\"tuning\">Tuning</h2>\n";
  out += fmt::format(
      "<p>{}: {} records, {} skipped; {}, {} trials in {:.1f} min.</p>\n", plural(t.logs.size(), "log"), t.records,
      plural(t.damaged, "damaged line"), plural(t.tasks.size(), "task"),
      [&] {
        size_t n = 0;
        for (const auto& task : t.tasks) n += task.trials.size();
        return n;
      }(),
      t.wall_seconds / 60);
  if (t.damaged > 0) {
    out += "<div class=\"note\" id=\"damaged\">Damaged lines (skipped, the rest of the log read):<br>";
    for (const std::string& d : t.damage) out += h(d) + "<br>";
    if (t.damage.size() < t.damaged) out += fmt::format("... and {} more", t.damaged - t.damage.size());
    out += "</div>\n";
  }
  // Whether each task's records apply, decided once: a target is parsed by asking LLVM.
  std::vector<bool> applies_here;
  for (const TaskHistory& task : t.tasks) applies_here.push_back(applies(task, wanted));
  std::vector<std::string> foreign;
  for (size_t i = 0; i < t.tasks.size(); ++i)
    if (!applies_here[i] && std::find(foreign.begin(), foreign.end(), t.tasks[i].target) == foreign.end())
      foreign.push_back(t.tasks[i].target);
  for (const std::string& f : foreign)
    out += fmt::format(
        "<div class=\"note\" id=\"other-target\">Records for another target: <b>{}</b> (this report is for {}); "
        "their tasks are shown, and a model compiled here does not use them.</div>\n",
        h(f), h(wanted ? wanted->match_key() : std::string("-")));
  data["records"] = t.records;
  data["damaged"] = t.damaged;
  data["targets"] = t.targets;
  data["other_targets"] = foreign;
  data["wall_seconds"] = t.wall_seconds;
  if (t.tasks.empty()) return out + "<p>No records.</p>\n";

  // The task scheduler's view: the estimate and the trials each task got.
  // Its tasks are the first target's that applies (the log's first without a report target).
  const auto first_applying = std::find(applies_here.begin(), applies_here.end(), true);
  const std::string scheduled_target =
      first_applying == applies_here.end() ? t.targets.front() : t.tasks[first_applying - applies_here.begin()].target;
  const auto estimate = t.estimated_latency(scheduled_target);
  Chart latency{"Estimated network latency (task scheduler)", {"trials"}, {"ms"}, {}};
  Series est = line_series("sum of weight x best");
  for (const auto& [trial, seconds] : estimate) est.points.push_back({double(trial), seconds * 1e3});
  latency.series.push_back(est);
  BarChart trials{"Trials per task", "trials", {}, {}};
  json tasks_json = json::array();
  std::string table =
      "<table id=\"tasks\"><tr><th>#</th><th class=\"text\">task</th><th class=\"text\">workload</th>"
      "<th>weight</th><th>trials</th><th>best ms</th><th>best GFLOPS</th><th>errors</th><th "
      "class=\"text\">target</th></tr>\n";
  for (size_t i = 0; i < t.tasks.size(); ++i) {
    const TaskHistory& task = t.tasks[i];
    int errors = 0;
    for (const auto& [kind, n] : task.errors) errors += n;
    trials.bars.push_back({fmt::format("#{} {}", i, task.task_name), double(task.trials.size())});
    table += fmt::format(
        "<tr><td>{}</td><td class=\"text\"><a href=\"#task-{}\">{}</a></td><td class=\"text\">{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}{}</td></tr>\n",
        i, i, h(task.task_name), h(task.description), task.weight, task.trials.size(), cell(task.best_seconds * 1e3),
        cell(task.gflops(task.best_seconds), 1), errors, h(task.target), applies_here[i] ? "" : " (another target)");
    tasks_json.push_back({{"index", i},
                          {"task", task.task_name},
                          {"workload_key", task.workload_key},
                          {"target", task.target},
                          {"applies", bool(applies_here[i])},
                          {"description", task.description},
                          {"weight", task.weight},
                          {"flop", task.flop},
                          {"trials", task.trials.size()},
                          {"confirmed", task.confirmed.size()},
                          {"best_ms", finite_or_null(task.best_seconds * 1e3)},
                          {"best_gflops", task.gflops(task.best_seconds)},
                          {"errors", task.errors}});
  }
  table += "</table>\n";
  data["tasks"] = tasks_json;
  data["estimated_latency_ms"] = estimate.empty() ? -1.0 : estimate.back().second * 1e3;
  out += "<h3 id=\"task-scheduler\">Task scheduler</h3>\n<div class=\"charts\">" + render_svg(latency) +
         render_svg(trials) + "</div>\n" + table;

  // Per task: convergence against trials and wall time, the spread, errors, leaders.
  for (size_t i = 0; i < t.tasks.size(); ++i) {
    const TaskHistory& task = t.tasks[i];
    const bool have_flop = task.flop > 0;
    // With a flop count, throughput (higher is better); without, latency (lower is better).
    const auto value = [&](double seconds) { return have_flop ? task.gflops(seconds) : seconds * 1e3; };
    const std::string unit = have_flop ? "GFLOPS" : "ms";
    Series best = line_series("best so far"), each = point_series("each trial"), best_time = best;
    double so_far = std::numeric_limits<double>::infinity();
    for (const Trial& trial : task.trials) {
      if (std::isfinite(trial.seconds)) {
        each.points.push_back({double(trial.number), value(trial.seconds)});
        if (trial.seconds < so_far) {
          // The best so far is a staircase: it holds until a trial beats it.
          if (std::isfinite(so_far)) {
            best.points.push_back({double(trial.number), value(so_far)});
            best_time.points.push_back({trial.elapsed, value(so_far)});
          }
          so_far = trial.seconds;
        }
      }
      if (std::isfinite(so_far)) {
        best.points.push_back({double(trial.number), value(so_far)});
        best_time.points.push_back({trial.elapsed, value(so_far)});
      }
    }
    best_time.name = "";
    Chart by_trial{fmt::format("#{} {} against trials", i, task.task_name), {"trials"}, {unit}, {each, best}};
    Chart by_time{fmt::format("#{} best against wall time", i), {"seconds since the run began"}, {unit}, {best_time}};
    out += fmt::format(
        "<div class=\"task\" id=\"task-{}\"><h3>#{} {}</h3><p class=\"meta\">{} &middot; {} &middot; "
        "weight {} &middot; key {}</p>\n",
        i, i, h(task.task_name), h(task.description), h(task.target), task.weight, h(task.workload_key));
    out += "<div class=\"charts\">" + render_svg(by_trial) + render_svg(by_time) + "</div>\n";
    std::string errors;
    for (const auto& [kind, n] : task.errors) errors += fmt::format("{}{}: {}", errors.empty() ? "" : ", ", kind, n);
    out += fmt::format("<p>Errors by kind: {}.</p>\n", errors.empty() ? "none" : h(errors));
    if (!task.confirmed.empty()) {
      out += "<table><tr><th>confirmed leader</th><th>ms</th>" + std::string(have_flop ? "<th>GFLOPS</th>" : "") +
             "</tr>\n";
      for (const Trial& c : task.confirmed)
        out += fmt::format("<tr><td>{}</td><td>{}</td>{}</tr>\n", c.number, cell(c.seconds * 1e3),
                           have_flop ? "<td>" + cell(task.gflops(c.seconds), 1) + "</td>" : "");
      out += "</table>\n";
    } else {
      out += "<p>No confirmed leaders (the run ended before re-measuring them, or predates it).</p>\n";
    }
    out += "</div>\n";
  }
  return out;
}

std::string model_section(const ReportInput& in, json& data) {
  const ModelProfile& m = *in.model;
  std::string out = "<h2 id=\"model\">Model</h2>\n";
  double total = 0, flop = 0;
  size_t tuned = 0, known = 0;
  for (const KernelProfile& k : m.kernels) {
    total += k.seconds;
    flop += k.flop * k.calls;
    tuned += k.tuned;
    known += k.known;
  }
  out += fmt::format(
      "<p>{}: <b>{:.3f} ms</b> a run (the fastest), {}, {} ({} by a tuning record, {} by the "
      "hand-written schedule); {:.2f} GFLOP a run, {:.1f} GFLOPS.</p>\n",
      h(m.source), m.latency * 1e3, plural(m.threads, "thread"), plural(m.kernels.size(), "kernel"), tuned,
      known - tuned, flop / 1e9, m.latency > 0 ? flop / m.latency / 1e9 : 0.0);
  if (known < m.kernels.size())
    out +=
        "<div class=\"note\">This artifact predates kernel_info: what its kernels compute and whether a record "
        "scheduled them is unknown (compile it again).</div>\n";
  if (in.peak)
    out += fmt::format(
        "<p class=\"meta\">Roofline measured on this machine in this run: {:.0f} GFLOPS ({}-bit fp32 FMAs, {}), "
        "{:.1f} GB/s reading memory.</p>\n",
        in.peak->gflops, in.peak->vector_bits, plural(in.peak->threads, "thread"), in.peak->gbytes_per_second);

  BarChart shares{"Share of the network's time (slowest kernels)", "%", {}, {}};
  Chart roofline{"Roofline", {"arithmetic intensity (flop / byte)", true}, {"GFLOPS", true}, {}, 560, 360};
  Series tuned_points = point_series("tuned kernels", "#d55e00"),
         hand_points = point_series("hand-written kernels", "#0072b2");
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  json kernels = json::array();
  std::string table =
      "<table id=\"kernels\"><tr><th class=\"text\">kernel</th><th class=\"text\">computes</th><th>calls</th>"
      "<th>ms</th><th>share %</th><th>GFLOPS</th><th>% of peak</th><th>flop/byte</th><th class=\"text\">schedule"
      "</th></tr>\n";
  for (const KernelProfile& k : m.kernels) {
    const double share = total > 0 ? 100 * k.seconds / total : 0;
    if (shares.bars.size() < kShareBars) shares.bars.push_back({k.name, share});
    if (k.flop > 0 && k.bytes > 0 && k.seconds > 0) {
      (k.tuned ? tuned_points : hand_points).points.push_back({k.intensity(), k.gflops()});
      lo = std::min(lo, k.intensity()), hi = std::max(hi, k.intensity());
    }
    const std::string schedule = !k.known ? "unknown" : k.tuned ? "tuning record" : "hand-written";
    table += fmt::format(
        "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>\n",
        h(k.name), h(k.nodes), k.calls, cell(k.seconds * 1e3), cell(share, 1), cell(k.gflops(), 1),
        in.peak && in.peak->gflops > 0 ? cell(100 * k.gflops() / in.peak->gflops, 1) : "-", cell(k.intensity(), 2),
        schedule);
    kernels.push_back({{"name", k.name},
                       {"nodes", k.nodes},
                       {"calls", k.calls},
                       {"ms", k.seconds * 1e3},
                       {"share", share},
                       {"flop", k.flop},
                       {"bytes", k.bytes},
                       {"gflops", k.gflops()},
                       {"schedule", schedule}});
  }
  table += "</table>\n";
  if (in.peak && in.peak->gflops > 0 && std::any_of(m.kernels.begin(), m.kernels.end(), [&](const KernelProfile& k) {
        return k.gflops() > in.peak->gflops;
      }))
    table +=
        "<p class=\"note\" id=\"above-peak\">Kernels above 100 % of the peak count more arithmetic than they do: "
        "a Winograd kernel's flop count takes its transforms' products by constant matrices in full, as its "
        "tensor expression states them, and the compiled code folds most of them away.</p>\n";
  roofline.series = {hand_points, tuned_points};
  if (in.peak && in.peak->gflops > 0 && std::isfinite(lo)) {
    // The ceilings over the kernels' span of intensities, a decade past on each side.
    Series roof = line_series("roof: min(peak, bandwidth x intensity)", "#444", true);
    const double a = lo / 10, b = hi * 10, ridge = in.peak->gflops / in.peak->gbytes_per_second;
    for (double x : {a, std::clamp(ridge, a, b), b})
      roof.points.push_back({x, std::min(in.peak->gflops, x * in.peak->gbytes_per_second)});
    roofline.series.push_back(roof);
  }
  out += "<div class=\"charts\">" + render_svg(shares) + render_svg(roofline) + "</div>\n" + table;
  data["source"] = m.source;
  data["target"] = m.target;
  data["threads"] = m.threads;
  data["latency_ms"] = m.latency * 1e3;
  data["kernels"] = kernels;
  data["tuned_kernels"] = tuned;
  if (in.peak)
    data["peak"] = {{"gflops", in.peak->gflops},
                    {"gbytes_per_second", in.peak->gbytes_per_second},
                    {"vector_bits", in.peak->vector_bits}};
  return out;
}

std::string baseline_section(const ReportInput& in, json& data) {
  const Baselines& b = *in.baselines;
  std::string model = in.model_name;
  const int threads = in.model ? in.model->threads : 0;
  std::string out = "<h2 id=\"baselines\">Against the baselines</h2>\n";
  out += fmt::format("<p class=\"meta\">From {} (measured on {}; {}).</p>\n", h(b.path), h(b.host), [&] {
    std::string v;
    for (const auto& [name, version] : b.versions) v += fmt::format("{}{} {}", v.empty() ? "" : ", ", name, version);
    return h(v.empty() ? "no versions given" : v);
  }());
  BarChart bars{fmt::format("{} at {} thread{}: latency", model, threads, threads == 1 ? "" : "s"), "ms", {}, {}};
  json rows = json::array();
  if (in.model) {
    bars.bars.push_back({"tessera (this report)", in.model->latency * 1e3});
    bars.highlight.push_back("tessera (this report)");
  }
  std::string table =
      "<table id=\"baseline-table\"><tr><th class=\"text\">side</th><th>min ms</th><th>median ms</th>"
      "<th>tessera / side</th></tr>\n";
  for (const BaselineRow& r : b.rows) {
    if (r.model != model || (threads > 0 && r.threads != threads)) continue;
    bars.bars.push_back({r.side, r.min_ms});
    const double ratio = in.model && r.min_ms > 0 ? in.model->latency * 1e3 / r.min_ms : 0;
    table += fmt::format("<tr><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", h(r.side),
                         cell(r.min_ms, 2), cell(r.median_ms, 2), cell(ratio, 2));
    rows.push_back({{"side", r.side}, {"min_ms", r.min_ms}, {"median_ms", r.median_ms}, {"tessera_ratio", ratio}});
  }
  table += "</table>\n";
  if (rows.empty())
    out += fmt::format("<div class=\"note\">{} has no row for {} at {}.</div>\n", h(b.path), h(model),
                       plural(threads, "thread"));
  else
    out += render_svg(bars) + table;
  data["file"] = b.path;
  data["rows"] = rows;
  data["versions"] = b.versions;
  return out;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return buf;
}

}  // namespace

std::string tessera_version() { return fmt::format("commit {}, LLVM {}", TESSERA_REVISION, TESSERA_LLVM_VERSION); }

Baselines read_baselines(const std::string& path) {
  Baselines b;
  b.path = path;
  try {
    const json j = json::parse(support::read_file(path));
    b.host = j.value("host", std::string("unknown"));
    if (j.contains("versions"))
      for (const auto& [name, version] : j.at("versions").items()) b.versions[name] = version.get<std::string>();
    for (const json& r : j.at("rows"))
      b.rows.push_back({r.at("model").get<std::string>(), r.at("side").get<std::string>(), r.at("threads").get<int>(),
                        r.at("min_ms").get<double>(), r.value("median_ms", 0.0)});
  } catch (const json::exception& e) {
    throw Error("baseline file '" + path +
                "' is not a benchmark's JSON (bench/network_vs_frameworks.py --json): " + e.what());
  }
  return b;
}

std::string render_report(const ReportInput& in) {
  std::optional<target::Target> wanted;
  if (!in.target.empty()) wanted = target::Target::parse(in.target);
  json data = {{"version", tessera_version()}, {"host", in.host}, {"target", in.target}, {"command", in.command}};
  std::string body;
  body += tuning_section(in, wanted, data["tuning"]);
  if (in.model) body += model_section(in, data["model"]);
  if (in.baselines) body += baseline_section(in, data["baselines"]);

  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Tessera report</title>\n";
  page += "<style>" + std::string(kStyle) + "</style>\n</head><body>\n<h1>Tessera report</h1>\n";
  page += fmt::format(
      "<p class=\"meta\" id=\"meta\">Made {} by <code>{}</code><br>Tessera {}<br>Host: {}<br>Target: {}{}</p>\n",
      today(), h(in.command), h(tessera_version()), h(in.host), h(in.target.empty() ? "the log's own" : in.target),
      in.model ? ", " + plural(in.model->threads, "thread") : "");
  page += "<p class=\"meta\">Sections: <a href=\"#tuning\">tuning</a>" +
          std::string(in.model ? ", <a href=\"#model\">model</a>" : "") +
          (in.baselines ? ", <a href=\"#baselines\">baselines</a>" : "") + ".</p>\n";
  page += body;
  // The numbers again for programs; "</" cannot end the script early once escaped.
  std::string dumped = data.dump(-1, ' ', false, json::error_handler_t::replace);
  for (size_t at = 0; (at = dumped.find("</", at)) != std::string::npos; at += 3) dumped.replace(at, 2, "<\\/");
  page += "<script type=\"application/json\" id=\"tessera-report\">" + dumped + "</script>\n</body></html>\n";
  return page;
}

}  // namespace tessera::report
