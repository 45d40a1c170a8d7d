#pragma once
// The thread pool that parallel loops of generated kernels run on. One pool per
// process, created on first use (so a forked child builds its own); the thread
// count is configurable and never exceeded (the calling thread is one of them).
#include <cstdint>

namespace tessera::runtime {

// body(closure, begin, end) handles iterations [begin, end) of a parallel loop.
using ParallelBody = void (*)(void* closure, int64_t begin, int64_t end);

// Runs [0, n) on at most num_threads() threads, as contiguous ranges (a few
// per thread, taken in order so that a slowed thread takes fewer).
void parallel_for(ParallelBody body, void* closure, int64_t n);

// 0 means "number of cores". Takes effect for the next parallel loop.
void set_num_threads(int n);
int num_threads();

}  // namespace tessera::runtime
