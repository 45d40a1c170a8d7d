#include "target/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/read_file.h"
#include "tessera/error.h"
#include "vta/config.h"

namespace tessera::target {
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
  t.byte_dot.clear();
  t.byte_dot_bits = 0;
  if (t.isa == "avx512" && has("+avx512vnni")) {
    t.byte_dot = "vnni", t.byte_dot_bits = 512;
  } else if (has("+avxvnni") && t.vector_bits >= 256) {
    t.byte_dot = "vnni", t.byte_dot_bits = 256;
  } else if (t.isa == "avx512" && has("+avx512bw")) {
    t.byte_dot = "pmaddubsw", t.byte_dot_bits = 512;
  } else if (t.isa == "avx2" || t.isa == "avx512") {
    t.byte_dot = "pmaddubsw", t.byte_dot_bits = 256;
  }
}

// LLVM 16 exposes no list of a target's feature names and only warns about
// an unknown one (then generates code without it). A name is known exactly
// when turning it on or off changes a baseline CPU's feature bits: one the
// baseline lacks is added by "+name", one it has is removed by "-name".
bool is_known_feature(const std::string& name) {
  std::unique_ptr<llvm::MCSubtargetInfo> base = subtarget_info("x86-64", "");
  if (!base) return true;  // no tables to ask: let LLVM judge
  const llvm::FeatureBitset bits = base->getFeatureBits();
  return subtarget_info("x86-64", "+" + name)->getFeatureBits() != bits ||
         subtarget_info("x86-64", "-" + name)->getFeatureBits() != bits;
}

void require_known_features(const std::string& text, const std::string& features) {
  std::istringstream items(features);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.size() < 2 || (item[0] != '+' && item[0] != '-'))
      throw Error("target '" + text + "': feature '" + item + "' must be +name or -name");
    if (!is_known_feature(item.substr(1)))
      throw Error("target '" + text + "': unknown CPU feature '" + item.substr(1) + "'");
  }
}

// The vector ISAs from the widest down, each with the LLVM feature whose
// removal leaves the next one (removing a feature removes those implying it).
struct IsaLevel {
  const char* isa;
  const char* feature;
};
constexpr IsaLevel kIsaLevels[] = {{"avx512", "avx512f"}, {"avx2", "avx2"}, {"avx", "avx"}, {"sse", nullptr}};

// Position in kIsaLevels (0: widest), or -1 for an unknown name.
int isa_level(const std::string& isa) {
  for (int i = 0; i < static_cast<int>(std::size(kIsaLevels)); ++i)
    if (isa == kIsaLevels[i].isa) return i;
  return -1;
}

// Extensions kernels may contain (the vector units and what LLVM emits beside
// them). CPU models also differ in tuning flags, which do not stop code running.
constexpr const char* kInstructionSets[] = {"sse4.2",   "avx",      "avx2",       "fma",       "f16c",
                                            "bmi",      "bmi2",     "avx512f",    "avx512bw",  "avx512dq",
                                            "avx512vl", "avx512cd", "avx512vnni", "avx512bf16", "avxvnni"};

// `digits` as an int; none when it is not one whole (in range, nothing after it).
std::optional<int> whole_number(std::string_view digits) {
  int n = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}

int parse_threads(const std::string& text, const std::string& value) {
  const std::optional<int> n = whole_number(value);
  if (!n || *n < 1) throw Error("target '" + text + "': -threads=" + value + " is not a positive thread count");
  return *n;
}

// A positive integer option's value, else an error naming the target and the option.
int positive_option(const std::string& text, const std::string& option, const std::string& value, int at_most) {
  const std::optional<int> n = whole_number(value);
  if (!n || *n < 1 || *n > at_most)
    throw Error("target '" + text + "': " + option + "=" + value + " is not a whole number from 1 to " +
                std::to_string(at_most));
  return *n;
}

// "cuda [-arch=sm_NN] [-max_threads_per_block=N] [-max_shared_memory_per_block=B] [-tf32]",
// "opencl" with the same limits (no arch). CUDA 13 compiles for sm_75 and
// newer; a block holds at most 1024 threads (whole warps) and 227 KB of
// shared memory on any of them.
Target parse_gpu(const std::string& kind, const std::string& text, std::istringstream& words) {
  Target t;
  t.kind = kind;
  t.vector_bits = 0;
  t.vector_registers = 0;
  t.isa.clear();
  for (std::string word; words >> word;) {
    const size_t eq = word.find('=');
    const std::string option = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (option == "-arch" && kind == "cuda") {
      const std::optional<int> arch =
          value.rfind("sm_", 0) == 0 ? whole_number(std::string_view(value).substr(3)) : std::nullopt;
      if (!arch || *arch < 75)
        throw Error("target '" + text + "': -arch=" + value +
                    " is not an NVIDIA arch CUDA 13 compiles for (sm_75 or newer)");
      t.gpu.arch = *arch;
    } else if (option == "-max_threads_per_block") {
      t.gpu.max_threads_per_block = positive_option(text, option, value, 1024);
      if (t.gpu.max_threads_per_block % t.gpu.warp_size != 0)
        throw Error("target '" + text + "': " + word + " is not a whole number of " +
                    std::to_string(t.gpu.warp_size) + "-thread warps");
    } else if (option == "-max_shared_memory_per_block") {
      t.gpu.max_shared_memory_per_block = positive_option(text, option, value, 227 * 1024);
    } else if (word == "-tf32" && kind == "cuda") {
      t.tf32 = true;
    } else {
      throw Error("target '" + text + "': unknown option '" + word + "' for " + kind + " (" +
                  (kind == "cuda" ? "-arch, " : "") + "-max_threads_per_block, -max_shared_memory_per_block" +
                  (kind == "cuda" ? ", -tf32" : "") + ")");
    }
  }
  if (t.tf32 && t.gpu.arch < 80)
    throw Error("target '" + text + "': -tf32 needs tensor cores that take TF32 (sm_80 or newer), not " +
                t.gpu.arch_name());
  return t;
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
  if (kind == "cuda" || kind == "opencl") return parse_gpu(kind, text, words);
  if (kind == "vta") {
    std::string options, config;
    for (std::string word; words >> word;) {
      if (word.rfind("-config=", 0) == 0) config = word.substr(8);
      else options += " " + word;
    }
    Target t = parse("llvm" + options);
    t.accelerator = "vta";
    if (!config.empty()) {
      // A file, or the JSON itself (what str() writes).
      const std::string json = config.front() == '{' ? config : support::read_file(config);
      const vta::VtaConfig parsed = vta::VtaConfig::from_json(json, "target '" + text + "': -config=" + config);
      if (parsed.to_json() != vta::VtaConfig{}.to_json())
        t.accelerator_config = nlohmann::json::parse(parsed.to_json()).dump();
    }
    return t;
  }
  if (kind != "llvm") throw Error("target '" + text + "': expected 'llvm', 'cuda', 'opencl' or 'vta'");

  Target t = host();
  bool cpu_given = false, features_given = false;
  std::string isa;
  for (std::string word; words >> word;) {
    if (word.rfind("-isa=", 0) == 0) {
      isa = word.substr(5);
    } else if (word.rfind("-mcpu=", 0) == 0) {
      t.cpu = word.substr(6);
      cpu_given = true;
    } else if (word.rfind("-mattr=", 0) == 0) {
      t.features = word.substr(7);
      features_given = true;
    } else if (word.rfind("-threads=", 0) == 0) {
      t.threads = parse_threads(text, word.substr(9));
    } else {
      throw Error("target '" + text + "': unknown option '" + word + "'");
    }
  }
  // LLVM would only warn and generate generic code for a misspelt CPU.
  if (cpu_given) {
    std::unique_ptr<llvm::MCSubtargetInfo> generic = subtarget_info("", "");
    if (generic && !generic->isCPUStringValid(t.cpu)) throw Error("target '" + text + "': unknown CPU '" + t.cpu + "'");
  }
  if (features_given) require_known_features(text, t.features);
  // Another CPU than ours: its own features, not the host's.
  if (cpu_given && !features_given) t.features.clear();
  if (cpu_given || features_given) set_vector_unit(t);
  if (!isa.empty()) {
    if (cpu_given || features_given)
      throw Error("target '" + text + "': -isa caps this host's vector ISA; with -mcpu or -mattr, name the features");
    const int threads = t.threads;
    try {
      t = host_with_isa(isa);
    } catch (const Error& e) {
      throw Error("target '" + text + "': " + e.what());
    }
    t.threads = threads;
  }
  return t;
}

namespace {

// The limits that differ from the arch's defaults, " name=value" each.
std::string narrowed_limits(const GpuLimits& g, const std::string& prefix) {
  const GpuLimits defaults;
  std::string s;
  if (g.max_threads_per_block != defaults.max_threads_per_block)
    s += " " + prefix + "max_threads_per_block=" + std::to_string(g.max_threads_per_block);
  if (g.max_shared_memory_per_block != defaults.max_shared_memory_per_block)
    s += " " + prefix + "max_shared_memory_per_block=" + std::to_string(g.max_shared_memory_per_block);
  return s;
}

}  // namespace

std::string Target::str() const {
  if (kind == "cuda") return "cuda -arch=" + gpu.arch_name() + narrowed_limits(gpu, "-") + (tf32 ? " -tf32" : "");
  if (kind == "opencl") return "opencl" + narrowed_limits(gpu, "-");
  if (kind != "llvm") return kind;
  std::string s = accelerator.empty() ? "llvm" : accelerator;
  if (!accelerator_config.empty()) s += " -config=" + accelerator_config;
  if (!cpu.empty()) s += " -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + features;
  if (threads > 0) s += " -threads=" + std::to_string(threads);
  return s;
}

Target Target::host_with_isa(const std::string& isa) {
  const int want = isa_level(isa);
  if (want < 0) throw Error("vector ISA '" + isa + "': expected avx512, avx2, avx or sse");
  Target t = host();
  const int have = isa_level(t.isa);
  if (want < have) throw Error("vector ISA '" + isa + "': this host (" + t.cpu + ") has no " + isa + ", only " + t.isa);
  // Appended last, so they override whatever the host's string turned on.
  for (int level = have; level < want; ++level)
    t.features += (t.features.empty() ? "-" : ",-") + std::string(kIsaLevels[level].feature);
  set_vector_unit(t);
  if (t.isa != isa) throw Error("vector ISA '" + isa + "': LLVM made '" + t.str() + "' " + t.isa + " instead");
  return t;
}

std::string Target::match_key() const {
  if (kind == "cuda") return "cuda " + gpu.arch_name() + narrowed_limits(gpu, "") + (tf32 ? " tf32" : "");
  if (kind == "opencl") return "opencl" + narrowed_limits(gpu, "");
  if (kind != "llvm") return kind;
  std::string key = (accelerator.empty() ? kind : accelerator) + " " +
                    (accelerator_config.empty() ? "" : "config=" + accelerator_config + " ") + isa + " " + std::to_string(vector_bits) + "-bit";
  if (threads > 0) key += " threads=" + std::to_string(threads);
  return key;
}

std::vector<std::string> Target::instruction_sets() const {
  std::vector<std::string> sets;
  if (kind != "llvm") return sets;
  std::unique_ptr<llvm::MCSubtargetInfo> info = subtarget_info(cpu, features);
  if (!info) return sets;
  for (const char* name : kInstructionSets)
    if (info->checkFeatures(std::string("+") + name)) sets.push_back(name);
  return sets;
}

std::vector<std::string> Target::missing_on(const Target& host) const {
  if (kind != host.kind) return {kind};
  std::unique_ptr<llvm::MCSubtargetInfo> mine = subtarget_info(cpu, features);
  std::unique_ptr<llvm::MCSubtargetInfo> theirs = subtarget_info(host.cpu, host.features);
  std::vector<std::string> missing;
  if (!mine || !theirs) return missing;
  for (const char* name : kInstructionSets) {
    const std::string flag = std::string("+") + name;
    if (mine->checkFeatures(flag) && !theirs->checkFeatures(flag)) missing.push_back(name);
  }
  return missing;
}

bool same_code_target(const Target& recorded, const Target& wanted) {
  Target a = recorded, b = wanted;
  if (a.threads == 0 || b.threads == 0) a.threads = b.threads = 0;  // not stated: any
  return a.match_key() == b.match_key();
}

void require_runnable_here(const Target& target) {
  // A GPU's code runs on its device, whose driver only a child process may
  // load (neither CUDA nor PoCL survives a fork): each measurement says
  // when there is none.
  if (target.is_gpu()) return;
  const Target& here = Target::host();
  std::vector<std::string> missing = target.missing_on(here);
  if (missing.empty()) return;
  std::string names;
  for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
  throw Error("target '" + target.str() + "' needs " + names + ", which this host (" + here.cpu + ", " + here.isa +
              ") lacks, so its code cannot run here");
}

}  // namespace tessera::target
