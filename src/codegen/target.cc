#include "codegen/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "tessera/error.h"

namespace tessera::codegen {
namespace {

void initialize_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

// The widest fp32 vector the CPU/feature pair supports, asking LLVM's own
// feature tables (so "-mcpu=skylake-avx512" alone implies 512).
std::unique_ptr<llvm::MCSubtargetInfo> subtarget_info(const std::string& cpu, const std::string& features) {
  initialize_native_target();
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (target == nullptr) return nullptr;
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, cpu, features));
}

// The vector unit of a CPU/feature pair, from LLVM's own feature tables (so
// "-mcpu=skylake-avx512" alone implies AVX-512).
void set_vector_unit(Target& t) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = subtarget_info(t.cpu, t.features);
  auto has = [&](const char* feature) { return info && info->checkFeatures(feature); };
  t.vector_registers = 16;
  if (has("+avx512f")) {
    t.isa = "avx512", t.vector_bits = 512, t.vector_registers = 32;
  } else if (has("+avx2")) {
    t.isa = "avx2", t.vector_bits = 256;
  } else if (has("+avx")) {
    t.isa = "avx", t.vector_bits = 256;
  } else {
    t.isa = "sse", t.vector_bits = 128;
  }
}

Target detect_host() {
  Target t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> host_features;
  if (llvm::sys::getHostCPUFeatures(host_features)) {
    // Sorted, so that the string (part of a record's target) is stable.
    std::vector<std::string> names;
    // Only where the host departs from its CPU model's defaults: the string
    // stays short enough to read in records and warnings, and means the same.
    std::unique_ptr<llvm::MCSubtargetInfo> defaults = subtarget_info(t.cpu, "");
    for (const auto& entry : host_features) {
      const std::string name = entry.getKey().str();
      const bool on = entry.getValue();
      if (defaults && defaults->checkFeatures("+" + name) == on) continue;
      names.push_back((on ? "+" : "-") + name);
    }
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      return a.substr(1) < b.substr(1);
    });
    for (const std::string& name : names) t.features += (t.features.empty() ? "" : ",") + name;
  }
  set_vector_unit(t);
  return t;
}

}  // namespace

Target Target::host() {
  static const Target detected = detect_host();  // the machine does not change under us
  return detected;
}

Target Target::parse(const std::string& text) {
  std::istringstream words(text);
  std::string kind;
  words >> kind;
  if (kind == "cuda") {
    Target t;
    t.kind = "cuda";
    t.vector_bits = 0;
    t.vector_registers = 0;
    t.isa.clear();
    if (words >> kind) throw Error("target '" + text + "': options are not supported for cuda");
    return t;
  }
  if (kind != "llvm") throw Error("target '" + text + "': expected 'llvm' or 'cuda'");

  Target t = host();
  bool cpu_given = false, features_given = false;
  for (std::string word; words >> word;) {
    if (word.rfind("-mcpu=", 0) == 0) {
      t.cpu = word.substr(6);
      cpu_given = true;
    } else if (word.rfind("-mattr=", 0) == 0) {
      t.features = word.substr(7);
      features_given = true;
    } else {
      throw Error("target '" + text + "': unknown option '" + word + "'");
    }
  }
  // Another CPU than ours: its own features, not the host's.
  if (cpu_given && !features_given) t.features.clear();
  if (cpu_given || features_given) set_vector_unit(t);
  return t;
}

std::string Target::str() const {
  if (kind != "llvm") return kind;
  std::string s = "llvm";
  if (!cpu.empty()) s += " -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + features;
  return s;
}

}  // namespace tessera::codegen
