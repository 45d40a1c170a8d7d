#include "runtime/host_cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <functional>
#include <map>

namespace tessera::runtime {

bool host_has(const std::string& instruction_set) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports wants literals, and checks the OS saves the
  // vector registers too (an AVX-512 CPU under an OS that does not, lacks it).
  static const std::map<std::string, std::function<bool()>> checks = {
      {"sse4.2", [] { return __builtin_cpu_supports("sse4.2") != 0; }},
      {"avx", [] { return __builtin_cpu_supports("avx") != 0; }},
      {"avx2", [] { return __builtin_cpu_supports("avx2") != 0; }},
      {"fma", [] { return __builtin_cpu_supports("fma") != 0; }},
      // GCC 12 cannot ask for F16C by name: CPUID leaf 1, ECX bit 29, with
      // the OS saving AVX state (F16C works on the ymm registers).
      {"f16c",
       [] {
         unsigned a = 0, b = 0, c = 0, d = 0;
         return __builtin_cpu_supports("avx") != 0 && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
       }},
      {"bmi", [] { return __builtin_cpu_supports("bmi") != 0; }},
      {"bmi2", [] { return __builtin_cpu_supports("bmi2") != 0; }},
      {"avx512f", [] { return __builtin_cpu_supports("avx512f") != 0; }},
      {"avx512bw", [] { return __builtin_cpu_supports("avx512bw") != 0; }},
      {"avx512dq", [] { return __builtin_cpu_supports("avx512dq") != 0; }},
      {"avx512vl", [] { return __builtin_cpu_supports("avx512vl") != 0; }},
      {"avx512cd", [] { return __builtin_cpu_supports("avx512cd") != 0; }},
      {"avx512vnni", [] { return __builtin_cpu_supports("avx512vnni") != 0; }},
      {"avx512bf16", [] { return __builtin_cpu_supports("avx512bf16") != 0; }},
      // GCC 12 names AVX-VNNI but does not detect it: CPUID leaf 7 sub-leaf
      // 1, EAX bit 4, with the OS saving AVX state.
      {"avxvnni",
       [] {
         unsigned a = 0, b = 0, c = 0, d = 0;
         return __builtin_cpu_supports("avx2") != 0 && __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
       }},
  };
  auto it = checks.find(instruction_set);
  return it != checks.end() && it->second();
#else
  return false;
#endif
}

std::vector<std::string> missing_on_host(const std::vector<std::string>& needed) {
  std::vector<std::string> missing;
  for (const std::string& name : needed)
    if (!host_has(name)) missing.push_back(name);
  return missing;
}

}  // namespace tessera::runtime
