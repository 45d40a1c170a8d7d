#include "rpc/job.h"

#include <cmath>

#include <fmt/format.h>

#include "tessera/error.h"

namespace tessera::rpc {

namespace {

constexpr size_t kMaxTensors = 64;
constexpr size_t kMaxRank = 8;
constexpr int64_t kMaxElements = int64_t(1) << 28;  // per tensor: 1 GiB of floats

// `none_allowed`: an empty list is one (a VTA program's job has no tensors).
std::vector<std::vector<int64_t>> shapes_field(const nlohmann::json& h, const char* name, bool none_allowed = false) {
  auto it = h.find(name);
  if (it == h.end() || !it->is_array() || (it->empty() && !none_allowed) || it->size() > kMaxTensors)
    throw Error(fmt::format("field '{}' must be a list of 1 to {} shapes", name, kMaxTensors));
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& shape : *it) {
    if (!shape.is_array() || shape.size() > kMaxRank)
      throw Error(fmt::format("field '{}': a shape must be a list of at most {} sizes", name, kMaxRank));
    std::vector<int64_t> dims;
    int64_t elements = 1;
    for (const auto& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxElements)
        throw Error(fmt::format("field '{}': sizes must be integers in [1, {}]", name, kMaxElements));
      dims.push_back(d.get<int64_t>());
      elements *= dims.back();  // both factors <= 2^28: no overflow
      if (elements > kMaxElements) throw Error(fmt::format("field '{}': a tensor of more than {} elements", name, kMaxElements));
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

int64_t elements_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

double number_field(const nlohmann::json& h, const char* name, double lo, double hi) {
  auto it = h.find(name);
  if (it == h.end() || !it->is_number()) throw Error(fmt::format("field '{}' must be a number", name));
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi)) throw Error(fmt::format("field '{}' = {:g} is outside [{:g}, {:g}]", name, v, lo, hi));
  return v;
}

bool bool_field(const nlohmann::json& h, const char* name) {
  auto it = h.find(name);
  if (it == h.end() || !it->is_boolean()) throw Error(fmt::format("field '{}' must be true or false", name));
  return it->get<bool>();
}

}  // namespace

bool is_safe_upload_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

Message encode_job(const Job& job) {
  const auto& o = job.options;
  Message m;
  m.header = {{"type", "run"},
              {"token", job.token},
              {"job", job.id},
              {"name", job.name},
              {"function", job.function},
              {"inputs", job.inputs},
              {"outputs", job.outputs},
              {"options", {{"number", o.number}, {"repeat", o.repeat}, {"min_repeat_ms", o.min_repeat_ms},
                           {"timeout", o.timeout}, {"flush_cache", o.enable_cpu_cache_flush},
                           {"check", job.check}, {"tolerance", o.tolerance}, {"threads", o.num_threads}}}};
  m.blobs.push_back(job.object);
  if (job.check) m.blobs.push_back(job.expected);
  return m;
}

Job decode_job(const Message& m, const JobLimits& limits) {
  const auto& h = m.header;
  Job job;
  job.token = string_field(h, "token", 64);
  job.id = string_field(h, "job", 64);
  job.name = string_field(h, "name", 64);
  if (!is_safe_upload_name(job.name))
    throw Error("field 'name' must be 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'");
  job.function = string_field(h, "function", 128);
  if (!is_safe_upload_name(job.function)) throw Error("field 'function' is not a plain symbol name");
  const bool program = job.function == kVtaProgram;
  job.inputs = shapes_field(h, "inputs", program);
  job.outputs = shapes_field(h, "outputs", program);
  auto it = h.find("options");
  if (it == h.end() || !it->is_object()) throw Error("field 'options' must be an object");
  const auto& o = *it;
  job.options.number = static_cast<int>(integer_field(o, "number", 1, 1000000));
  job.options.repeat = static_cast<int>(integer_field(o, "repeat", 1, 1000));
  job.options.min_repeat_ms = static_cast<int>(integer_field(o, "min_repeat_ms", 0, 600000));
  job.options.timeout = number_field(o, "timeout", 1e-3, limits.max_run_seconds);
  job.options.enable_cpu_cache_flush = bool_field(o, "flush_cache");
  job.check = bool_field(o, "check");
  job.options.check_correctness = job.check;
  job.options.tolerance = number_field(o, "tolerance", 0, 1e30);
  job.options.num_threads = static_cast<int>(integer_field(o, "threads", 0, 4096));
  if (m.blobs.size() != (job.check ? 2u : 1u))
    throw Error(fmt::format("a run {} needs {} blob(s), got {}", job.check ? "with check" : "without check",
                            job.check ? 2 : 1, m.blobs.size()));
  for (const auto& blob : m.blobs)
    if (blob.size() > limits.max_upload_bytes)
      throw Error(fmt::format("a blob of {} bytes (the limit is {})", blob.size(), limits.max_upload_bytes));
  job.object = m.blobs[0];
  if (program && job.check) throw Error("a VTA program's job has no output to check");
  if (!program && !measure::is_shared_object(job.object))
    throw Error("the object is not an ELF shared object (servers load kernels with the runtime, not a linker)");
  if (job.check) {
    job.expected = m.blobs[1];
    const auto want = static_cast<size_t>(elements_of(job.outputs[0])) * sizeof(float);
    if (job.expected.size() != want)
      throw Error(fmt::format("the expected output has {} bytes, the first output needs {}", job.expected.size(), want));
  }
  return job;
}

nlohmann::json result_to_json(const measure::MeasureResult& r) {
  nlohmann::json costs = nlohmann::json::array();
  for (double c : r.costs) costs.push_back(std::isfinite(c) ? nlohmann::json(c) : nlohmann::json(nullptr));
  return {{"costs", costs}, {"error", measure::to_string(r.error)}, {"error_message", r.error_message.substr(0, 4000)},
          {"all_cost", r.all_cost}};
}

measure::MeasureResult result_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("a result must be an object");
  measure::MeasureResult r;
  auto costs = j.find("costs");
  if (costs == j.end() || !costs->is_array() || costs->size() > 1000) throw Error("field 'costs' must be a list");
  for (const auto& c : *costs) r.costs.push_back(c.is_number() ? c.get<double>() : std::nan(""));
  r.error = measure::error_kind_from_string(string_field(j, "error", 32));
  r.error_message = string_field(j, "error_message", 4096);
  r.all_cost = number_field(j, "all_cost", 0, 1e9);
  return r;
}

}  // namespace tessera::rpc
