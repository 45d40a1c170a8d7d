#pragma once
// A blocked int8 convolution (ops::qlinear_conv2d_nchwc) as the int8 tests
// build it, compiled under a given schedule for a target and, where this host
// runs that target's code, run on bytes across their whole range and
// compared with the integer reference.
#include <cstdint>
#include <functional>
#include <string>

#include "ir/compute_dag.h"
#include "ops/qlinear_conv2d.h"
#include "schedule/trace.h"
#include "target/target.h"

namespace tessera::testing {

struct QLinearConvCase {
  ops::Shape x;  // N, C, H, W
  int64_t out_channels, kernel;
  ops::Conv2dAttrs attrs;
  int64_t ic_bn, oc_bn;
  bool centered = false;  // its products centered (ops::QLinearConv2dAttrs::centered)
};

// Its attributes: NCHW<ic_bn>c data, the int8 kernel layout, zero points,
// scales and a relu.
ops::QLinearConv2dAttrs blocked_attrs(const QLinearConvCase& c);

// Its DAG: uint8 data, int8 weights, float scales, int32 bias.
ir::ComputeDAG qlinear_conv_dag(const QLinearConvCase& c);

struct QLinearConvRun {
  std::string assembly;
  // The largest difference from the integer reference; -1 where this host
  // does not run the target's code.
  double difference = -1;
};

// Compiles `dag` (qlinear_conv_dag(c)) under `trace` for `target`; runs it on
// `threads` threads with weights in [-most, min(most, 127)].
QLinearConvRun run_qlinear_conv(const QLinearConvCase& c, const ir::ComputeDAG& dag, const schedule::Trace& trace,
                                const target::Target& target, int most, int threads = 1);

}  // namespace tessera::testing
