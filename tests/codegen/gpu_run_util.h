#pragma once
// Runs a lowered function on a GPU target's device (the OpenCL device, or a
// CUDA GPU) on seeded inputs and compares with its workload's reference:
// what the GPU schedule and template tests check.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../ops/ops_test_util.h"
#include "measure/gpu_function.h"
#include "ops/registry.h"
#include "support/half.h"

namespace tessera::codegen::test {

struct GpuRun {
  double max_relative_error = 0;
  std::string source;  // the device code that ran, for a failure's message
};

inline GpuRun run_against_reference(const ops::Workload& w, const tir::LoweredFunc& f, const target::Target& target,
                                    uint32_t seed) {
  const auto placeholders = w.dag.placeholders();
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> in;
  std::vector<float*> args;
  for (size_t i = 0; i < placeholders.size(); ++i)
    inputs.push_back(ops::test::random_data(placeholders[i]->num_elements(), seed + static_cast<uint32_t>(i)));
  for (auto& v : inputs) {
    in.push_back(v.data());
    args.push_back(v.data());
  }
  const ir::Tensor out = w.dag.outputs()[0];
  std::vector<float> want(out->num_elements()), got(out->num_elements(), -7.0f);
  w.reference(in, want.data());
  args.push_back(got.data());
  measure::GpuFunction function(f, target);
  function.run(args);
  return {ops::test::max_relative_error(got, want), function.code().source};
}

// The same for a kernel of w's DAG in half storage (ir::with_half_storage):
// the inputs rounded to halves first, the reference's output after (what
// differs is the order of additions).
inline GpuRun run_half_against_reference(const ops::Workload& w, const tir::LoweredFunc& f,
                                         const target::Target& target, uint32_t seed) {
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> in;
  std::vector<float*> args;
  for (const auto& p : w.dag.placeholders()) {
    inputs.push_back(ops::test::random_data(p->num_elements(), seed++));
    for (float& x : inputs.back()) x = support::half_to_float(support::float_to_half(x));
  }
  for (auto& v : inputs) {
    in.push_back(v.data());
    args.push_back(v.data());
  }
  std::vector<float> want(w.dag.outputs()[0]->num_elements()), got(want.size(), -7.0f);
  w.reference(in, want.data());
  for (float& x : want) x = support::half_to_float(support::float_to_half(x));
  args.push_back(got.data());
  measure::GpuFunction function(f, target);
  function.run(args);
  return {ops::test::max_relative_error(got, want), function.code().source};
}

// Each kernel of CUDA C source holding several, from its signature to its
// closing brace (the text between kernels, preludes too, left out).
inline std::vector<std::string> kernel_sources(const std::string& code) {
  std::vector<std::string> kernels;
  for (size_t at = code.find("__global__"); at != std::string::npos; at = code.find("__global__", at + 1)) {
    const size_t end = code.find("\n}\n", at);
    kernels.push_back(code.substr(at, end == std::string::npos ? std::string::npos : end + 3 - at));
  }
  return kernels;
}

// Whether some kernel of CUDA C source (not its preludes, which define the
// helpers) calls `helper`: "tsr_tc_mma" finds the tensor-core products,
// whichever way their operands are loaded (tsr_tc_mma, tsr_tc_mma_frags).
inline bool kernels_call(const std::string& code, const std::string& helper) {
  for (const std::string& kernel : kernel_sources(code))
    if (kernel.find(helper) != std::string::npos) return true;
  return false;
}

// Each kernel of CUDA C by the device buffers it stores to: a parameter
// that begins a statement "name[...] = ...".
inline std::map<std::string, std::string> kernels_by_written_buffer(const std::string& code) {
  std::map<std::string, std::string> kernels;
  for (const std::string& kernel : kernel_sources(code)) {
    std::set<std::string> parameters;
    std::istringstream signature(kernel.substr(kernel.find('(') + 1, kernel.find(") {") - kernel.find('(') - 1));
    for (std::string parameter; std::getline(signature, parameter, ',');)
      parameters.insert(parameter.substr(parameter.rfind(' ') + 1));
    std::istringstream lines(kernel);
    for (std::string line; std::getline(lines, line);) {
      const size_t start = line.find_first_not_of(' '), open = line.find('[');
      if (start == std::string::npos || open == std::string::npos || line.find("] = ") == std::string::npos) continue;
      const std::string name = open > start ? line.substr(start, open - start) : "";
      if (parameters.count(name)) kernels[name] = kernel;
    }
  }
  return kernels;
}

}  // namespace tessera::codegen::test
