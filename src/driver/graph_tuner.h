#pragma once
// The graph tuner (seed 000's DPTuner / PBQPTuner): chooses each
// convolution's channel blocks (NCHW[x]c) across the whole network. A
// convolution's blocks decide how fast its kernel runs and whether a layout
// transform must run between it and its neighbours; the tuner weighs both.
// Int8 convolutions (qlinear_conv2d) are nodes like float ones: their blocks
// and kernels (qlinear_conv2d_NCHWc.x86), the transforms of their bytes.
//
//   states of a convolution: the blocks it takes when the graph is blocked by
//     each candidate width (lanes / 2, lanes, 2 x lanes, ...);
//   node cost: its kernel's time in that state: the config of its task's
//     best record in the log, else the template's fallback config, every
//     state measured afresh in interleaved rounds (times from the log were
//     taken at other moments, by other runners: on a noisy machine they are
//     not comparable with each other);
//   edge cost: the measured time of the transform between a producer's
//     output blocks and the reader's input blocks (its data, or the residual
//     its epilogue adds), 0 where they agree;
// then the assignment of least total time by dynamic programming over the
// graph (PBQP where DP's frontier grows too large, or when asked).
//
// The choice is written as a records file: per chosen kernel the record its
// time came from, its workload naming the convolutions that chose it
// ("nodes"), and the best records of the other tasks (dense, ...). Building
// with that file (graph_choices) gives each convolution its blocks and kernel
// schedule.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "target/target.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "measure/builder.h"
#include "measure/runner.h"
#include "compile/graph_choices.h"
#include "records/record.h"

namespace tessera::driver {

struct GraphTunerOptions {
  std::string solver = "dp";  // "dp" (exact; PBQP when its frontier is too large) or "pbqp"
  // Candidate block widths; empty: lanes / 2, lanes and 2 x lanes.
  std::vector<int64_t> widths;
  measure::Builder* builder = nullptr;  // measure transforms and untuned kernels
  measure::Runner* runner = nullptr;
  bool winograd = true;  // as BuildOptions::winograd: the build this choice is for
  int rounds = 3;        // interleaved rounds of the kernels' measurement (each state: its fastest round)
};

struct GraphTunerResult {
  std::map<std::string, graph::ConvBlocks> conv_blocks;  // by convolution (node name after the passes)
  std::vector<records::Record> records;                  // the chosen kernels' records
  double default_seconds = 0;                            // the objective with every convolution at the target's lanes
  double chosen_seconds = 0;                             // the objective of the choice
  int convolutions = 0, edges = 0, transforms_measured = 0;
  int kernels_measured = 0, kernels_untuned = 0;  // distinct kernels timed; of those, without a tuning record
  std::string solver;  // the solver that made the choice
};

// `log`: the kernel tuning records (any target; only matching ones count).
// Progress lines ("INFO ...") go to `out`. Throws tessera::Error when the
// builder or runner is missing or a measurement of a state fails.
GraphTunerResult tune_graph(const graph::Graph& model, const target::Target& target,
                            const std::vector<records::Record>& log, const GraphTunerOptions& options,
                            std::ostream& out);

}  // namespace tessera::driver
