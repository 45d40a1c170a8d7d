#pragma once
// A measurement as it travels between a tuner (RpcRunner) and a server: the
// "run" message of server.h, and the result that comes back.
#include <optional>
#include <string>
#include <vector>

#include "measure/isolated_run.h"
#include "measure/measure_input.h"
#include "rpc/message.h"

namespace tessera::rpc {

// The function name of a job whose object is a VTA program (JSON, measure/
// vta_measure.h) rather than a shared object: no tensors, no check.
inline constexpr const char* kVtaProgram = "vta-program";

struct Job {
  std::string token;     // the tracker's grant
  std::string id;        // unique within the tuner: a late answer to an abandoned job is recognised
  std::string name;      // the object's file name on the server
  std::string function;  // the kernel's symbol
  std::vector<std::vector<int64_t>> inputs, outputs;  // shapes, in argument order
  measure::LocalRunnerOptions options;                // cores are the server's to choose
  bool check = false;                                 // compare the first output with `expected`
  std::string object;                                 // the compiled object file
  std::string expected;                               // float32 bytes of the first output, when checking
};

Message encode_job(const Job& job);

struct JobLimits {
  size_t max_upload_bytes = 64u << 20;
  double max_run_seconds = 600;
};
// tessera::Error naming what is wrong: a bad field, an unsafe name, a shape
// out of range, a blob too large or of the wrong size.
Job decode_job(const Message& message, const JobLimits& limits);

nlohmann::json result_to_json(const measure::MeasureResult& result);
measure::MeasureResult result_from_json(const nlohmann::json& json);  // tessera::Error when malformed

// Letters, digits, '.', '_' and '-', 1 to 64 of them, not starting with '.':
// a file name that cannot leave the directory it is put in.
bool is_safe_upload_name(const std::string& name);

}  // namespace tessera::rpc
