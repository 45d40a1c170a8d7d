#include "runtime/gpu_code.h"

#include <cstring>

#include "tessera/error.h"

namespace tessera::runtime {

nlohmann::json GpuCode::to_json() const {
  nlohmann::json ks = nlohmann::json::object();
  for (const auto& [name, k] : kernels) {
    nlohmann::json launches = nlohmann::json::array();
    for (const GpuLaunch& l : k.launches)
      launches.push_back({{"name", l.name}, {"grid", l.grid}, {"block", l.block}, {"params", l.params}});
    ks[name] = {{"workspace", k.workspace}, {"launches", launches}};
  }
  return {{"dialect", dialect}, {"source", source}, {"arch", arch}, {"kernels", ks}};
}

GpuCode GpuCode::from_json(const nlohmann::json& j, const std::string& source_name) {
  try {
    GpuCode c;
    c.dialect = j.at("dialect").get<std::string>();
    if (c.dialect != "opencl" && c.dialect != "cuda")
      throw Error("unknown GPU dialect '" + c.dialect + "' (opencl, cuda)");
    c.source = j.at("source").get<std::string>();
    c.arch = j.at("arch").get<int>();
    for (const auto& [name, k] : j.at("kernels").items()) {
      GpuKernel kernel;
      kernel.workspace = k.at("workspace").get<std::vector<int64_t>>();
      for (const auto& l : k.at("launches")) {
        GpuLaunch launch{l.at("name").get<std::string>(), l.at("grid").get<std::array<int64_t, 3>>(),
                         l.at("block").get<std::array<int64_t, 3>>(), l.at("params").get<std::vector<int>>()};
        for (int64_t d : launch.grid)
          if (d < 1) throw Error("kernel '" + launch.name + "' has an empty grid");
        for (int64_t d : launch.block)
          if (d < 1 || d > 1024) throw Error("kernel '" + launch.name + "' has a block of no GPU");
        kernel.launches.push_back(std::move(launch));
      }
      c.kernels[name] = std::move(kernel);
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw Error(source_name + ": malformed 'gpu' section: " + e.what());
  } catch (const Error& e) {
    throw Error(source_name + ": 'gpu' section: " + e.what());
  }
}

namespace {

void put_part(std::string& out, const std::string& part) {
  const uint64_t size = part.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out += part;
}

std::string take_part(const std::string& bytes, size_t& at, const std::string& source_name) {
  uint64_t size = 0;
  if (bytes.size() - at < sizeof size) throw Error(source_name + ": truncated GPU code");
  std::memcpy(&size, bytes.data() + at, sizeof size);
  at += sizeof size;
  if (bytes.size() - at < size) throw Error(source_name + ": truncated GPU code");
  std::string part = bytes.substr(at, size);
  at += size;
  return part;
}

}  // namespace

bool is_gpu_code(const std::string& bytes) {
  return bytes.size() >= sizeof kGpuCodeMagic && std::memcmp(bytes.data(), kGpuCodeMagic, sizeof kGpuCodeMagic) == 0;
}

std::string GpuCode::serialize() const {
  std::string out(kGpuCodeMagic, sizeof kGpuCodeMagic);
  put_part(out, to_json().dump());
  put_part(out, cubin);
  put_part(out, ptx);
  return out;
}

GpuCode GpuCode::deserialize(const std::string& bytes, const std::string& source_name) {
  if (!is_gpu_code(bytes)) throw Error(source_name + ": not GPU code");
  size_t at = sizeof kGpuCodeMagic;
  const std::string json = take_part(bytes, at, source_name);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source_name + ": GPU code whose description is not JSON: " + e.what());
  }
  GpuCode code = from_json(j, source_name);
  code.cubin = take_part(bytes, at, source_name);
  code.ptx = take_part(bytes, at, source_name);
  return code;
}

}  // namespace tessera::runtime
