// Runs a compiled model with nothing but the runtime library: no compiler, no
// LLVM. Inputs are filled with seeded random values (or read from .npy files),
// the first output is printed in part and timed.
//
//   run_artifact MODEL.tsr [--threads N] [--input NAME=FILE.npy]... [--number N] [--repeat N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "runtime/graph_executor.h"
#include "runtime/npy.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

using namespace tessera;

int main(int argc, char** argv) {
  const bool help = argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h");
  if (argc < 2 || help) {
    std::fprintf(help ? stdout : stderr,
                 "usage: %s MODEL.tsr [--threads N] [--input NAME=FILE.npy]... [--number N] [--repeat N]\n", argv[0]);
    return help ? 0 : 2;
  }
  try {
    runtime::GraphExecutor executor = runtime::GraphExecutor::load(argv[1]);
    int number = 10, repeat = 3;
    executor.set_random_inputs();
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--threads") {
        runtime::set_num_threads(std::atoi(value.c_str()));
      } else if (flag == "--number") {
        number = std::atoi(value.c_str());
      } else if (flag == "--repeat") {
        repeat = std::atoi(value.c_str());
      } else if (flag == "--input" && value.find('=') != std::string::npos) {
        const size_t eq = value.find('=');
        executor.set_input(value.substr(0, eq), runtime::read_npy(value.substr(eq + 1)));
      } else {
        throw Error("unknown argument '" + flag + "'");
      }
    }
    executor.run();
    const runtime::NDArray out = executor.get_output(0);
    std::printf("target: %s\n", executor.target().c_str());
    std::printf("%zu kernel calls; activations %.2f MB planned (%.2f MB without reuse)\n",
                executor.graph().calls.size(), executor.memory_plan().activation_bytes / 1e6,
                executor.memory_plan().unplanned_activation_bytes / 1e6);
    std::printf("output '%s':", executor.output_name(0).c_str());
    for (int64_t i = 0; i < out.size() && i < 8; ++i) std::printf(" %.5f", out[i]);
    std::printf("%s\n", out.size() > 8 ? " ..." : "");
    std::printf("%s\n", executor.benchmark(number, repeat).summary().c_str());
    // The process's peak resident memory (the kernel's high-water mark since
    // exec): what loading and running the model took.
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmHWM:", 0) == 0) {
        const size_t at = line.find_first_not_of(" \t", 6);
        std::printf("peak resident memory: %s\n", line.substr(at == std::string::npos ? 6 : at).c_str());
      }
  } catch (const Error& e) {
    std::fprintf(stderr, "run_artifact: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
