#pragma once
// Register double buffering of a pipelined loop's fetches (a GPU codegen
// pass, after tir/stage_fetches.h): the loads of iteration k + 1 are in
// flight while iteration k computes.
//
// A reduction step of a tiled GPU stage fetches its operands' slices into
// shared memory, waits at a barrier, multiplies them, and waits again
// before the next step overwrites them. A block's threads then wait out
// each step's memory latency before they compute; only other blocks on the
// multiprocessor hide it. A staged fetch (its loads to registers, then its
// stores to shared memory) can instead load the next step's elements right
// after the first barrier:
//
//   for k (pipelined):                      staged = loads(0)
//     staged = loads(k)                     for k:
//     shared = staged                         shared = staged
//     barrier                         ->      barrier
//     compute(k)                              if (k + 1 < K) staged = loads(k + 1)
//     barrier                                 compute(k)
//                                             barrier
//
// The registers then live across the compute (fewer threads resident per
// multiprocessor): whether that pays depends on the kernel, so it is a
// choice of the search (schedule::Annotation::Pipeline), not a default.
//
// A Pipelined loop whose body is not [fetches, barrier, compute, barrier]
// with a staged fetch that reads nothing the loop writes stays as it was,
// a serial loop; so do the fetches that are not staged (vector copies).
#include "tir/stmt.h"

namespace tessera::tir {

// Every Pipelined loop of `s` pipelined, or serial where it cannot be.
Stmt pipeline_fetches(const Stmt& s);

}  // namespace tessera::tir
