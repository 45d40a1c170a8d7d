#pragma once
// The roofline's two ceilings, measured on this machine in the same run as the
// model they frame: the floating-point peak (independent fused multiply-adds
// of the target's vector width, on every thread) and the memory bandwidth (a
// stream of vector loads over a buffer far larger than the caches). Measured,
// not taken from a data sheet: cloud CPUs run at clocks no table knows.
namespace tessera::report {

struct MachinePeak {
  double gflops = 0;             // fp32, all threads
  double gbytes_per_second = 0;  // reading memory, all threads
  int vector_bits = 0;           // the FMA width measured (128, 256 or 512)
  int threads = 1;
};

// `vector_bits`: the target's vector width (a target capped at AVX2 is
// measured with 256-bit FMAs on an AVX-512 host); at most what the host runs.
MachinePeak measure_machine_peak(int vector_bits, int threads);

}  // namespace tessera::report
