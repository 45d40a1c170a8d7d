#include "runtime/vta_device.h"

#include <fmt/format.h>

#include <cstring>

#include "tessera/error.h"

namespace tessera::runtime {

namespace {

std::string to_hex(const uint8_t* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) s[2 * i] = digits[bytes[i] >> 4], s[2 * i + 1] = digits[bytes[i] & 15];
  return s;
}

std::vector<uint8_t> from_hex(const std::string& s, const std::string& where) {
  if (s.size() % 2) throw Error(where + ": odd number of hex digits");
  const auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(where + ": '" + std::string(1, c) + "' is not a hex digit");
  };
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(digit(s[2 * i]) * 16 + digit(s[2 * i + 1]));
  return out;
}

const char* transfer_name(VtaKernelCode::Transfer t) {
  return t == VtaKernelCode::Transfer::Copy ? "copy" : "widen_int8";
}

}  // namespace

nlohmann::json VtaCode::to_json() const {
  nlohmann::json kernels_json = nlohmann::json::array();
  for (const VtaKernelCode& k : kernels) {
    std::vector<uint8_t> words;
    words.reserve(k.instructions.size() * 16);
    for (const vta::Instruction& insn : k.instructions) {
      const std::array<uint64_t, 2> w = vta::encode(insn);
      const auto* b = reinterpret_cast<const uint8_t*>(w.data());
      words.insert(words.end(), b, b + 16);
    }
    nlohmann::json args = nlohmann::json::array();
    for (const auto& a : k.arguments)
      args.push_back({{"offset", a.offset}, {"stored_bytes", a.stored_bytes}, {"transfer", transfer_name(a.transfer)}});
    kernels_json.push_back({{"name", k.name},
                            {"instructions", to_hex(words.data(), words.size())},
                            {"dram_bytes", k.dram_bytes},
                            {"uops_offset", k.uops_offset},
                            {"uops", to_hex(k.uops.data(), k.uops.size())},
                            {"arguments", args}});
  }
  return {{"config", nlohmann::json::parse(config.to_json())}, {"kernels", kernels_json}};
}

VtaCode VtaCode::from_json(const nlohmann::json& j, const std::string& source) {
  const std::string where = source + ": section vta";
  VtaCode code;
  try {
    code.config = vta::VtaConfig::from_json(j.at("config").dump(), where + ": config");
    for (const nlohmann::json& k : j.at("kernels")) {
      VtaKernelCode kernel;
      kernel.name = k.at("name").get<std::string>();
      const std::string at = where + ": kernel " + kernel.name;
      const std::vector<uint8_t> words = from_hex(k.at("instructions").get<std::string>(), at);
      if (words.size() % 16) throw Error(at + ": instructions are 16 bytes each");
      for (size_t i = 0; i < words.size(); i += 16) {
        std::array<uint64_t, 2> w;
        std::memcpy(w.data(), words.data() + i, 16);
        kernel.instructions.push_back(vta::decode(w));
      }
      kernel.dram_bytes = k.at("dram_bytes").get<int64_t>();
      kernel.uops_offset = k.at("uops_offset").get<int64_t>();
      kernel.uops = from_hex(k.at("uops").get<std::string>(), at);
      if (kernel.dram_bytes < 0 || kernel.uops_offset < 0 ||
          kernel.uops_offset + static_cast<int64_t>(kernel.uops.size()) > kernel.dram_bytes)
        throw Error(at + ": micro-ops outside its DRAM image");
      for (const nlohmann::json& a : k.at("arguments")) {
        VtaKernelCode::Argument arg{a.at("offset").get<int64_t>(), a.at("stored_bytes").get<int64_t>()};
        const std::string t = a.at("transfer").get<std::string>();
        if (t == "widen_int8")
          arg.transfer = VtaKernelCode::Transfer::WidenInt8;
        else if (t != "copy")
          throw Error(at + ": unknown transfer '" + t + "'");
        const int64_t dram = arg.stored_bytes * (arg.transfer == VtaKernelCode::Transfer::WidenInt8 ? 4 : 1);
        if (arg.offset < 0 || arg.stored_bytes < 0 || arg.offset + dram > kernel.dram_bytes)
          throw Error(at + ": an argument outside its DRAM image");
        kernel.arguments.push_back(arg);
      }
      code.kernels.push_back(std::move(kernel));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what());
  }
  return code;
}

VtaKernelCode VtaKernelCode::of(std::string name, const vta::Program& p) {
  const auto uops = p.dram.begin() + p.uops.offset;
  return {std::move(name), p.instructions, static_cast<int64_t>(p.dram.size()), p.uops.offset,
          std::vector<uint8_t>(uops, uops + p.uops.bytes), {}};
}

std::vector<uint8_t> VtaKernelCode::dram_image() const {
  std::vector<uint8_t> dram(dram_bytes, 0);
  std::memcpy(dram.data() + uops_offset, uops.data(), uops.size());
  return dram;
}

double simulated_seconds_of_program(const std::string& json_text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": not JSON (" + e.what() + ")");
  }
  const VtaCode code = VtaCode::from_json(j, source);
  if (code.kernels.size() != 1)
    throw Error(fmt::format("{}: holds {} kernels, a candidate one", source, code.kernels.size()));
  const VtaKernelCode& k = code.kernels[0];
  std::vector<uint8_t> dram = k.dram_image();
  const vta::SimulationStats stats = vta::Simulator(code.config).run(k.instructions, dram, vta::Execution::TimingOnly);
  return code.config.seconds(stats.cycles);
}

VtaDevice::VtaDevice(VtaCode code) : code_(std::move(code)), simulator_(code_.config) {
  for (const VtaKernelCode& k : code_.kernels) dram_.push_back(k.dram_image());
}

int VtaDevice::kernel_index(const std::string& name) const {
  for (size_t i = 0; i < code_.kernels.size(); ++i)
    if (code_.kernels[i].name == name) return static_cast<int>(i);
  return -1;
}

vta::SimulationStats VtaDevice::run(int index, void* const* args) {
  const VtaKernelCode& k = code_.kernels.at(index);
  if (k.arguments.empty()) throw Error("VTA kernel " + k.name + " has no buffers to run on");
  std::vector<uint8_t>& dram = dram_[index];
  const size_t inputs = k.arguments.size() - 1;
  for (size_t i = 0; i < inputs; ++i) {
    const VtaKernelCode::Argument& a = k.arguments[i];
    if (a.transfer == VtaKernelCode::Transfer::Copy) {
      std::memcpy(dram.data() + a.offset, args[i], a.stored_bytes);
    } else {
      const auto* from = static_cast<const int8_t*>(args[i]);
      for (int64_t e = 0; e < a.stored_bytes; ++e) {
        const int32_t wide = from[e];
        std::memcpy(dram.data() + a.offset + 4 * e, &wide, 4);
      }
    }
  }
  vta::SimulationStats stats;
  try {
    stats = simulator_.run(k.instructions, dram);
  } catch (const Error& e) {
    throw Error(fmt::format("VTA kernel {}: {}", k.name, e.what()));
  }
  const VtaKernelCode::Argument& out = k.arguments.back();
  std::memcpy(args[inputs], dram.data() + out.offset, out.stored_bytes);
  return stats;
}

}  // namespace tessera::runtime
