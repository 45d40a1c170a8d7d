#pragma once
// tessera tune MODEL [--batch N] [--layout L] [--target T] [--threads N]
//                    [--search templates|auto] [--task-scheduler gradient|round-robin]
//                    [--tuner xgb] [--trials N] [--early-stopping N] [--log FILE]
//                    [--time-budget MIN] [--no-transfer-learning] [--graph-tuner dp|pbqp]
//                    [--graph-log FILE] [measure flags] [--quantize int8 [--calibrate N|FILE] ...]
//
// Seed 000's tune_and_evaluate: extracts the network's tasks and prints them,
// tunes them one after another into one log (resumable: rerun the same
// command after a crash, a kill or Ctrl-C), then compiles the network with
// the hand-written schedules and with the log's best records and, after the
// graph tuner chose every convolution's channel blocks (written as a records
// file, --graph-log), with those, and times them in interleaved rounds
// ("Mean inference time (std dev): X ms (Y ms)").
//
// --search auto is seeds 001/002's auto-scheduler instead: every distinct
// kernel of the build is a task (its own DAG), the task scheduler splits
// --trials x tasks trials over them and prints its table after every round,
// and the evaluation compares the default schedules with the log's best.
//
// --quantize int8 (and compile's calibration flags) tunes the network compile
// --quantize builds with the same flags: its int8 convolutions are tasks of
// the template qlinear_conv2d_NCHWc.x86 (layers of one shape share one, their
// scales aside).
#include <CLI/CLI.hpp>
#include <string>

#include "driver/tune_network.h"
#include "measure_flags.h"

#include "model_flags.h"
#include "quantize_flags.h"

namespace tessera::cli {

// The model and target flags, and driver::TuneOptions, whose fields the
// other flags set one to one (the --no-X flags negate theirs).
struct NetworkTuneOptions {
  std::string model;
  ModelFlags model_flags;  // --batch, --layout, --shape, --dim
  std::string target;
  int threads = 0;
  driver::TuneOptions tune;  // tune.log empty: MODEL.log; tune.graph_log empty: MODEL_graph_opt.log
  bool no_transfer_learning = false;
  bool no_winograd = false;
  bool no_evaluate = false;
  MeasureFlags measure;  // tune.builder / runner / confirm_runner, and confirm_leaders / rounds
  QuantizeFlags quantization;  // tune.quantize, calibrate, quantization
};

CLI::App* add_network_tune_command(CLI::App& app, NetworkTuneOptions& o);
int run_network_tune(const NetworkTuneOptions& o);

}  // namespace tessera::cli
