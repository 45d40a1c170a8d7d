#pragma once
// The target the benchmarks compare on: --target TEXT, or --isa avx2|avx512
// (this host's CPU with its vector ISA capped, for both sides), default the
// host. oneDNN is held to the target's vector ISA, so that an AVX2 comparison
// can be made on an AVX-512 machine.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <set>
#include <string>

#include "target/target.h"
#include "onednn.h"
#include "onednn_workload.h"
#include "tessera/error.h"

namespace tessera::bench {

struct TargetChoice {
  std::string target;  // Target::parse text; empty: the host
  std::string isa;     // "avx2" or "avx512": the host capped at that ISA; empty: no cap
};

inline void add_target_flags(CLI::App& app, TargetChoice& c) {
  CLI::Option* target = app.add_option(
      "--target", c.target, "our target, e.g. \"llvm -mcpu=haswell\" (default: this host); oneDNN gets its ISA");
  app.add_option("--isa", c.isa, "vector ISA of both sides: this host's CPU capped at it")
      ->check(CLI::IsMember({"avx2", "avx512"}))
      ->excludes(target);
}

// The chosen target, after capping oneDNN's ISA to it: call before creating
// any oneDNN primitive. Throws tessera::Error naming the flag for a target that
// does not parse, states threads (they come from --threads), or cannot run here.
inline target::Target choose_target(const TargetChoice& c) {
  target::Target t = target::Target::host();
  const std::string flag = !c.isa.empty() ? "--isa " + c.isa : "--target '" + c.target + "'";
  try {
    if (!c.isa.empty()) t = target::Target::host_with_isa(c.isa);
    if (!c.target.empty()) t = target::Target::parse(c.target);
    if (t.threads != 0) throw Error("thread counts come from --threads, not -threads=");
    target::require_runnable_here(t);
    baseline::match_target_isa(t);
  } catch (const Error& e) {
    throw Error(flag + ": " + e.what());
  }
  return t;
}

// What each side really ran: our target's ISA, and oneDNN's kernels (their
// names carry the ISA, e.g. "jit:avx2", "brg:avx512_core").
inline void print_isas(const target::Target& target, const std::set<std::string>& onednn_kernels) {
  std::string kernels;
  for (const std::string& k : onednn_kernels) kernels += (kernels.empty() ? "" : ", ") + k;
  fmt::print("ISA used: tessera {} with {}-bit vectors ({}); onednn kernels {}\n", target.isa, target.vector_bits,
             target.str(), kernels.empty() ? "none" : kernels);
}

}  // namespace tessera::bench
