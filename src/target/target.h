#pragma once
// A target as data (DESIGN.md, "two axes"): what code is generated for and
// what runs it. "llvm" is a CPU by its vector ISA, width, registers and
// threads; "cuda" (GPU archs) and accelerator configs join it as fields. The
// operator registry picks strategies by kind, lowering and codegen read the
// vector unit, records match targets by match_key().
#include <string>
#include <vector>

#include "schedule/vector_unit.h"

namespace tessera::target {

// An NVIDIA GPU's limits: data that GPU schedules, the GPU verifier and the
// records read. The defaults are sm_80's (a kernel's static shared memory:
// 48 KB without opting in), used when no device is there to ask.
struct GpuLimits {
  int arch = 80;  // compute capability x 10: 80 is sm_80, 90 sm_90
  int max_threads_per_block = 1024;
  int max_shared_memory_per_block = 48 * 1024;  // bytes
  int registers_per_block = 64 * 1024;          // 32-bit registers
  int max_registers_per_thread = 255;
  int warp_size = 32;

  std::string arch_name() const { return "sm_" + std::to_string(arch); }
  bool operator==(const GpuLimits&) const = default;
};

struct Target {
  std::string kind = "llvm";
  std::string cpu;       // LLVM CPU name, e.g. "znver3"
  std::string features;  // LLVM feature string, e.g. "+avx2,+fma"
  int vector_bits = 256; // widest native fp32 vector
  int vector_registers = 16;  // architectural vector registers (32 with AVX-512)

  // The vector ISA the code may use: "avx512", "avx2", "avx" or "sse" (x86).
  std::string isa = "avx2";

  // The byte dot product int8 kernels' inner loop runs on (tir::ForKind::
  // DotProduct): "vnni" (vpdpbusd: AVX-512 VNNI at 512 bits, AVX-VNNI at
  // 256), "pmaddubsw" (AVX2 or AVX-512BW without VNNI: vpmaddubsw, whose
  // pairs of products saturate at 16 bits, then vpmaddwd), "" (none: the
  // products widened to 32 bits). byte_dot_bits: its widest vector.
  std::string byte_dot;
  int byte_dot_bits = 0;

  // Threads the kernels run with, written "-threads=N": a schedule tuned on
  // one core is not the best on two. 0: not stated (one per core when run).
  int threads = 0;

  // kind "cuda": "cuda -arch=sm_90 -max_threads_per_block=N
  // -max_shared_memory_per_block=BYTES -tf32" (each optional); kind "opencl"
  // (OpenCL C for any OpenCL device, PoCL's CPU one in CI): the same limits.
  GpuLimits gpu;
  // "-tf32" (cuda, sm_80 and later): fp32 matrix products (dense,
  // batch_matmul, convolutions as one product) may run on tensor cores in
  // TF32, their operands rounded to 10-bit mantissas and summed in fp32, as
  // cuDNN's convolutions do under PyTorch's defaults
  // (torch.backends.cudnn.allow_tf32) and its matrix products with
  // torch.backends.cuda.matmul.allow_tf32. Off: fp32 products stay fp32.
  bool tf32 = false;

  // "vta": the network's packed convolutions (ops/conv2d_packed.h) run on the
  // VTA accelerator (simulated), and everything else on this CPU, described
  // by the fields above. Written "vta" with llvm's options ("vta -threads=1")
  // and "-config=FILE" for another vta_config.json than the seed's default.
  std::string accelerator;
  // The accelerator's vta_config.json, compact (no spaces: it is written in
  // the target's string as -config=JSON); empty: the default (vta/config.h).
  std::string accelerator_config;

  bool is_gpu() const { return kind == "cuda" || kind == "opencl"; }

  int vector_lanes() const { return vector_bits >= 32 ? vector_bits / 32 : 1; }
  schedule::VectorUnit vector_unit() const { return {.bits = vector_bits, .registers = vector_registers}; }

  static Target host();  // the machine we run on, with its detected features
  // "llvm", "llvm -mcpu=znver3", "llvm -mattr=+avx2,+fma", "llvm -mcpu=znver3
  // -threads=2", "llvm -isa=avx2" (this host capped at AVX2: host_with_isa),
  // "vta" (with llvm's options for its host CPU); throws tessera::Error
  // naming the text otherwise.
  static Target parse(const std::string& text);
  std::string str() const;

  // The host, its vector ISA capped at `isa` ("avx512", "avx2", "avx", "sse"),
  // e.g. AVX2 code on an AVX-512 machine; throws tessera::Error for an unknown
  // name or an ISA the host lacks.
  static Target host_with_isa(const std::string& isa);

  // What decides whether a schedule tuned for one target suits another: kind,
  // vector ISA and width, threads, e.g. "llvm avx2 256-bit threads=2" ("llvm
  // avx2 256-bit" when threads are not stated). Not the CPU name or feature
  // string: two Zen 3 machines whose detected features differ in some flag
  // unrelated to vectors run the same kernels equally well. For cuda: the
  // arch, any limit narrowed from its defaults and tf32, e.g. "cuda sm_90
  // max_threads_per_block=512", "cuda sm_90 tf32".
  std::string match_key() const;

  // The instruction-set extensions code for this target may use that `host`
  // lacks, e.g. {"avx512f", "avx512bw"}; empty when the host can run it.
  std::vector<std::string> missing_on(const Target& host) const;
  // The instruction-set extensions code for this target may use, e.g.
  // {"sse4.2", "avx", "avx2", "fma"}: what an artifact records for the
  // runtime to check (runtime/host_cpu.h), which has no LLVM to ask.
  std::vector<std::string> instruction_sets() const;
};

// True when records tuned on `recorded` apply to `wanted`: the same
// match_key(), except that a thread count not stated on either side matches
// any. Records written before targets carried -threads= state none; they stay
// usable, and dispatch says when it relies on this.
bool same_code_target(const Target& recorded, const Target& wanted);

// Throws tessera::Error naming the target when this host cannot run its
// code (CPU targets; a GPU target's device is each run's to find).
void require_runnable_here(const Target& target);

}  // namespace tessera::target
