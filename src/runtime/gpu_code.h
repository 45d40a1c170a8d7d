#pragma once
// The kernels of a model compiled for a GPU target: one source holding every
// device kernel (OpenCL C, built by the driver when loaded; CUDA C, compiled
// at build time to a cubin for the target's arch, with its PTX for newer
// ones), and per graph kernel (what an ExecutableGraph call names) the
// device kernels it launches in order, their grids, and the device buffers
// each takes. Stored in an artifact's "gpu" (JSON), "gpu.cubin" and "gpu.ptx"
// sections.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::runtime {

struct GpuLaunch {
  std::string name;  // the device kernel's symbol
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  // Per parameter: an index into the call's buffers (its inputs, then its
  // outputs), or, from there on, into the graph kernel's workspace.
  std::vector<int> params;
};

struct GpuKernel {
  std::vector<int64_t> workspace;  // elements of each scratch buffer between its launches
  std::vector<GpuLaunch> launches;
};

struct GpuCode {
  std::string dialect;  // "opencl" or "cuda"
  std::string source;
  int arch = 0;         // cuda: the sm_NN the cubin is for
  std::string cubin, ptx;
  std::map<std::string, GpuKernel> kernels;  // by graph kernel name

  // The JSON of everything but the binaries; from_json's errors name `source_name`.
  nlohmann::json to_json() const;
  static GpuCode from_json(const nlohmann::json& j, const std::string& source_name);

  // One file's bytes (a measured candidate's build): kGpuCodeMagic, then the
  // JSON, the cubin and the PTX, each after its u64 size.
  std::string serialize() const;
  static GpuCode deserialize(const std::string& bytes, const std::string& source_name);
};

inline constexpr char kGpuCodeMagic[8] = {'T', 'S', 'R', 'G', 'P', 'U', '1', '\0'};
bool is_gpu_code(const std::string& bytes);

}  // namespace tessera::runtime
