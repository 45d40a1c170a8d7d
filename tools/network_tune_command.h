#pragma once
// tessera tune MODEL [--batch N] [--layout L] [--target T] [--threads N]
//                    [--tuner xgb] [--trials N] [--early-stopping N] [--log FILE]
//                    [--time-budget MIN] [--no-transfer-learning] [--graph-tuner dp|pbqp]
//                    [--graph-log FILE] [measure flags]
//
// Seed 000's tune_and_evaluate: extracts the network's tasks and prints them,
// tunes them one after another into one log (resumable: rerun the same
// command after a crash, a kill or Ctrl-C), then compiles the network with
// the hand-written schedules and with the log's best records and, after the
// graph tuner chose every convolution's channel blocks (written as a records
// file, --graph-log), with those, and times them in interleaved rounds
// ("Mean inference time (std dev): X ms (Y ms)").
#include <CLI/CLI.hpp>
#include <string>

#include "measure_flags.h"

namespace tessera::cli {

struct NetworkTuneOptions {
  std::string model;
  int64_t batch = 1;
  std::string layout = "NCHW";
  std::string target;
  int threads = 0;
  std::string tuner = "xgb";
  int trials = 1000;  // per task
  int early_stopping = 400;
  std::string log;  // empty: MODEL.log
  double time_budget_min = 0;
  bool no_transfer_learning = false;
  bool no_winograd = false;
  std::string graph_tuner;  // "dp", "pbqp" or "" (none)
  std::string graph_log;    // empty: MODEL_graph_opt.log
  MeasureFlags measure;
  int eval_number = 20, eval_repeat = 5;
  bool no_evaluate = false;
  uint64_t seed = 0;
};

CLI::App* add_network_tune_command(CLI::App& app, NetworkTuneOptions& o);
int run_network_tune(const NetworkTuneOptions& o);

}  // namespace tessera::cli
