#pragma once
// A compiled model as the report draws it: the network's latency, and per
// kernel its share of that time (each call's fastest run, as `bench
// --profile`), its arithmetic and bytes per call (the roofline's two axes),
// and whether a tuning record scheduled it or the hand-written schedule did.
#include <string>
#include <vector>

#include "runtime/artifact.h"

namespace tessera::report {

struct KernelProfile {
  std::string name;
  std::string nodes;   // the graph nodes it computes ("" in an artifact without kernel_info)
  int calls = 0;       // how many times the network calls it
  double seconds = 0;  // all its calls together, each call's fastest run
  double flop = 0;     // per call; 0: unknown (an artifact without kernel_info)
  double bytes = 0;    // per call: the tensors it reads and writes, as stored
  bool tuned = false;
  bool known = false;  // the artifact says what it computes (kernel_info)
  std::string workload_key, task_key;

  double gflops() const { return flop > 0 && seconds > 0 ? flop * calls / seconds / 1e9 : 0; }
  double intensity() const { return bytes > 0 ? flop / bytes : 0; }  // flop per byte
};

struct ModelProfile {
  std::string source;  // the model's name or file
  std::string target;  // the artifact's target text
  int threads = 1;
  double latency = 0;                  // seconds: the fastest whole run (GraphExecutor::benchmark)
  std::vector<KernelProfile> kernels;  // slowest first
};

// Runs `artifact` (a CPU model this host can run) on random inputs with
// `threads` (0: the artifact's own): `repeat` timings of `number` runs each
// for the latency, then `number` profiled runs. Throws tessera::Error for a
// GPU or varying-shape artifact, naming `source`.
ModelProfile profile_model(runtime::Artifact artifact, const std::string& source, int threads, int number, int repeat);

}  // namespace tessera::report
