// Runs a program as if its CPU lacked AVX-512 (and AMX), and optionally
// AVX-VNNI: for timing onnxruntime at the ISA Tessera is capped at with
// `--target "llvm -isa=avx2"` or `-mcpu=haswell`, since onnxruntime has no
// option to cap its kernels and picks them from CPUID.
//
//   cc -O2 -shared -fPIC -o hide_cpu_features.so hide_cpu_features.c
//   HIDE_CPU_FEATURES=avx512[,avxvnni] LD_PRELOAD=./hide_cpu_features.so program
//
// Linux's CPUID faulting (ARCH_SET_CPUID; the `cpuid_fault` flag in
// /proc/cpuinfo) makes every CPUID instruction of the process raise SIGSEGV;
// the handler executes the real CPUID with faulting briefly off, clears the
// hidden features' bits and resumes after the instruction. The setting is
// per thread and inherited by threads created after it, so it is made in a
// constructor, before the program starts any.
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static int hide_avx512, hide_avxvnni;

static void cpuid_unfaulted(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(subleaf));
  syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
}

static void mask(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  if (leaf != 7) return;
  if (subleaf == 0 && hide_avx512) {
    // EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31.
    r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31));
    // ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14.
    r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    // EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, AVX512-FP16 23, AMX-TILE 24, AMX-INT8 25.
    r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  }
  if (subleaf == 1) {
    if (hide_avx512) r[0] &= ~(1u << 5);    // EAX: AVX512-BF16
    if (hide_avxvnni) r[0] &= ~(1u << 4);   // EAX: AVX-VNNI
  }
}

static void on_fault(int sig, siginfo_t* info, void* context) {
  ucontext_t* uc = (ucontext_t*)context;
  const uint8_t* ip = (const uint8_t*)uc->uc_mcontext.gregs[REG_RIP];
  if (ip[0] != 0x0f || ip[1] != 0xa2) {  // a real fault: die of it as without this library
    signal(sig, SIG_DFL);
    return;
  }
  uint32_t r[4];
  const uint32_t leaf = (uint32_t)uc->uc_mcontext.gregs[REG_RAX];
  const uint32_t subleaf = (uint32_t)uc->uc_mcontext.gregs[REG_RCX];
  cpuid_unfaulted(leaf, subleaf, r);
  mask(leaf, subleaf, r);
  uc->uc_mcontext.gregs[REG_RAX] = r[0];
  uc->uc_mcontext.gregs[REG_RBX] = r[1];
  uc->uc_mcontext.gregs[REG_RCX] = r[2];
  uc->uc_mcontext.gregs[REG_RDX] = r[3];
  uc->uc_mcontext.gregs[REG_RIP] += 2;
  (void)info;
}

__attribute__((constructor)) static void start(void) {
  const char* what = getenv("HIDE_CPU_FEATURES");
  if (!what || !*what) return;
  hide_avx512 = strstr(what, "avx512") != NULL;
  hide_avxvnni = strstr(what, "avxvnni") != NULL;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
    fprintf(stderr, "hide_cpu_features: this CPU or kernel has no CPUID faulting (cpuid_fault): %s not hidden\n", what);
    exit(2);
  }
}

// Leaf 7's feature words as the program now sees them (for a check that the
// masking is in force): EBX in the low 32 bits, subleaf 1's EAX in the high.
uint64_t hide_cpu_features_leaf7(void) {
  uint32_t a, b, c, d, a1, b1, c1, d1;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  __asm__ volatile("cpuid" : "=a"(a1), "=b"(b1), "=c"(c1), "=d"(d1) : "a"(7), "c"(1));
  return (uint64_t)b | ((uint64_t)a1 << 32);
}
