#pragma once
// The instruction sets this CPU runs, asked of the CPU itself (cpuid), so
// that the runtime, which has no LLVM, can refuse an artifact compiled for a
// CPU it is not: a kernel with AVX-512 on an AVX2 host dies of SIGILL.
#include <string>
#include <vector>

namespace tessera::runtime {

// The names codegen records (sse4.2, avx, avx2, fma, f16c, bmi, bmi2,
// avx512f, avx512bw, avx512dq, avx512vl, avx512cd, avx512vnni, avx512bf16).
// An unknown name counts as missing: this runtime cannot vouch for it.
bool host_has(const std::string& instruction_set);

// Of `needed`, those this host lacks, in order.
std::vector<std::string> missing_on_host(const std::vector<std::string>& needed);

}  // namespace tessera::runtime
