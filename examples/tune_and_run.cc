// The public API's tuning side end to end: tune a network's kernels into a
// log (resumed when it exists), keep the best record per task, compile with
// those, and run the compiled network next to a jit of the same model, which
// must agree.
//
//   tune_and_run [MODEL] [TRIALS] [LOG]   (default: squeezenet_v1.1, 16 trials per task, MODEL.log)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tessera/tessera.h"

int main(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "squeezenet_v1.1";
  const int trials = argc > 2 ? std::atoi(argv[2]) : 16;
  const std::string log = argc > 3 ? argv[3] : name + ".log";
  try {
    const tessera::Graph model = tessera::load_model(name);
    tessera::TuneOptions tuning{.log = log, .trials = trials, .early_stopping = trials, .evaluate = false};
    const tessera::TuneResult tuned = tessera::tune(model, tuning);
    std::printf("%s: %d tasks, %d tuned now, %d already tuned, %lld trials\n", name.c_str(), tuned.tasks, tuned.tuned,
                tuned.already_done, static_cast<long long>(tuned.trials));

    const std::string best = log + ".best";
    std::printf("kept the best of %zu records: %zu\n", tessera::load_records(log).size(), tessera::pick_best(log, best));
    tessera::GraphExecutor ex(tessera::compile(model, {.records = {best}}), name);
    tessera::NDArray image(ex.input_shape(0));
    image.fill_random(7);
    ex.set_input(0, image);
    ex.run();

    tessera::JitModel jitted = tessera::jit_model(name, {.records = best, .disk_cache = false});
    const float* again = jitted.run({{image.data(), image.shape()}}).at(0).data;  // valid until its next call
    double worst = 0;
    const tessera::NDArray compiled = ex.get_output(0);
    for (int64_t i = 0; i < compiled.size(); ++i) worst = std::fmax(worst, std::fabs(compiled[i] - again[i]));
    std::printf("compiled and jit outputs differ by at most %.2g\n%s\n", worst, ex.benchmark(5, 3).summary().c_str());
    return worst <= 1e-4 ? 0 : 1;
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "tune_and_run: error: %s\n", e.what());
    return 1;
  }
}
