// The public API end to end: compile a zoo network for this host, run it on
// one seeded "image", print the five largest logits and the latency.
//
//   classify [MODEL] [THREADS]      (default: resnet-18, one thread per core)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "runtime/thread_pool.h"
#include "tessera/tessera.h"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "resnet-18";
  try {
    if (argc > 2) tessera::runtime::set_num_threads(std::atoi(argv[2]));
    tessera::Graph model = tessera::load_model(name);
    tessera::GraphExecutor ex(tessera::compile(model), name);
    tessera::NDArray image(ex.input_shape(0));
    image.fill_random(2024);
    ex.set_input(0, image);
    ex.run();
    const tessera::NDArray logits = ex.get_output(0);
    std::vector<int> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b]; });
    std::printf("%s: top-5 classes", name.c_str());
    for (int i = 0; i < 5; ++i) std::printf(" %d (%.3f)", order[i], logits[order[i]]);
    std::printf("\n%s\n", ex.benchmark(5, 3).summary().c_str());
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "classify: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
