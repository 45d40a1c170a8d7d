#include "records/record.h"

#include <cmath>

#include "support/bounded_json.h"
#include "tessera/error.h"

namespace tessera::records {

using nlohmann::json;

namespace {

// Lines are written with a fixed field order ("v" first) so logs read well.
using ordered_json = nlohmann::ordered_json;

void require_finite(double x, const char* what, const Record& r) {
  if (!std::isfinite(x))
    throw Error("record for workload " + r.workload_key + ": " + what + " is not finite and cannot be logged");
}

const char* type_name(const json& j) { return j.type_name(); }

// Field access with messages naming the field, used by from_json_line.
// `path` is the dotted name shown to the user, e.g. "result.costs".
const json& field(const json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) throw Error("missing field '" + path + "'");
  return *it;
}

std::string string_field(const json& obj, const char* key, const std::string& path) {
  const json& j = field(obj, key, path);
  if (!j.is_string()) throw Error("field '" + path + "' must be a string, got " + type_name(j));
  return j.get<std::string>();
}

double number_field(const json& obj, const char* key, const std::string& path) {
  const json& j = field(obj, key, path);
  if (!j.is_number()) throw Error("field '" + path + "' must be a number, got " + type_name(j));
  return j.get<double>();
}

ordered_json result_to_json(const measure::MeasureResult& r) {
  return ordered_json{{"costs", r.costs},
              {"error", measure::to_string(r.error)},
              {"error_message", r.error_message},
              {"all_cost", r.all_cost},
              {"timestamp", r.timestamp}};
}

measure::MeasureResult result_from_json(const json& j) {
  if (!j.is_object()) throw Error("field 'result' must be an object, got " + std::string(type_name(j)));
  measure::MeasureResult r;
  const json& costs = field(j, "costs", "result.costs");
  const std::string costs_shape = "field 'result.costs' must be an array of numbers, ";
  if (!costs.is_array()) throw Error(costs_shape + "got " + type_name(costs));
  for (const json& c : costs) {
    if (!c.is_number()) throw Error(costs_shape + "found " + type_name(c));
    r.costs.push_back(c.get<double>());
  }
  r.error = measure::error_kind_from_string(string_field(j, "error", "result.error"));
  if (j.contains("error_message")) r.error_message = string_field(j, "error_message", "result.error_message");
  r.all_cost = number_field(j, "all_cost", "result.all_cost");
  r.timestamp = number_field(j, "timestamp", "result.timestamp");
  return r;
}

}  // namespace

std::string Record::to_json_line() const {
  for (double c : result.costs) require_finite(c, "a cost", *this);
  require_finite(result.all_cost, "all_cost", *this);
  require_finite(result.timestamp, "timestamp", *this);

  ordered_json line;
  line["v"] = kRecordFormatVersion;
  line["workload_key"] = workload_key;
  line["task"] = task_name;
  line["workload"] = workload;
  line["target"] = target;
  line["config_index"] = config_index ? ordered_json(*config_index) : ordered_json(nullptr);
  line["config"] = config;
  line["trace"] = trace.to_json();
  line["result"] = result_to_json(result);
  if (confirmed) line["confirmed"] = true;
  // No indentation: a compact dump escapes control characters, so the line
  // never contains a newline.
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

Record Record::from_json_line(const std::string& line) {
  // Limits keep a hostile line from crashing the reader: it costs only itself.
  const json j = support::parse_bounded_json(line, {.max_depth = 16, .max_elements = 4096, .max_bytes = 1u << 20});
  if (!j.is_object()) throw Error(std::string("not a JSON object, got ") + type_name(j));

  const json& v = field(j, "v", "v");
  if (!v.is_number_integer()) throw Error(std::string("field 'v' must be an integer, got ") + type_name(v));
  if (v.get<int64_t>() != kRecordFormatVersion)
    throw Error("unknown format version " + v.dump() + " (this Tessera reads version " +
                std::to_string(kRecordFormatVersion) + ")");

  Record r;
  r.workload_key = string_field(j, "workload_key", "workload_key");
  r.task_name = string_field(j, "task", "task");
  r.target = string_field(j, "target", "target");
  // workload, config_index, config and trace may be absent or null: a
  // template-free search has no config, a template search may log no trace.
  if (auto it = j.find("workload"); it != j.end()) r.workload = *it;
  if (auto it = j.find("config_index"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer())
      throw Error(std::string("field 'config_index' must be an integer, got ") + type_name(*it));
    r.config_index = it->get<int64_t>();
  }
  if (auto it = j.find("config"); it != j.end()) r.config = *it;
  if (auto it = j.find("trace"); it != j.end() && !it->is_null()) {
    try {
      r.trace = schedule::Trace::from_json(*it);
    } catch (const Error& e) {
      throw Error(std::string("field 'trace': ") + e.what());
    }
  }
  r.result = result_from_json(field(j, "result", "result"));
  if (auto it = j.find("confirmed"); it != j.end()) {
    if (!it->is_boolean()) throw Error(std::string("field 'confirmed' must be true or false, got ") + type_name(*it));
    r.confirmed = it->get<bool>();
  }
  return r;
}

}  // namespace tessera::records
