#pragma once
// A benchmark's result as Python sees it: {"mean_ms", "std_ms", "min_ms",
// "median_ms"}, whichever module (host or GPU) measured it.
#include <pybind11/pybind11.h>

#include <mutex>

#include "runtime/graph_executor.h"

namespace tessera::python {

inline pybind11::dict timing_dict(const runtime::BenchmarkResult& r) {
  pybind11::dict d;
  d["mean_ms"] = r.mean() * 1e3;
  d["std_ms"] = r.std_dev() * 1e3;
  d["min_ms"] = r.min() * 1e3;
  d["median_ms"] = r.median() * 1e3;
  return d;
}

// executor.benchmark(number, repeat) with the GIL released, taking its turn
// on the module's mutex (one call at a time), as timing_dict.
template <typename Executor>
pybind11::dict benchmark_dict(Executor& executor, std::mutex& mutex, int number, int repeat) {
  runtime::BenchmarkResult r;
  {
    pybind11::gil_scoped_release release;
    std::lock_guard<std::mutex> one_call_at_a_time(mutex);
    r = executor.benchmark(number, repeat);
  }
  return timing_dict(r);
}

}  // namespace tessera::python
