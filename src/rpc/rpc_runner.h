#pragma once
// RpcRunner: measures a batch on the devices of one key behind a tracker
// (seed 000's RPCRunner(key, host, port, number, repeat, timeout,
// min_repeat_ms)). It asks the tracker for as many devices as the batch has
// candidates, runs one candidate at a time on each device it is granted,
// all of them in parallel, and gives the devices back when the batch is done.
//
// A device that dies or goes silent mid-measurement costs nothing: its
// candidate is measured again on another device, up to max_attempts devices,
// and only then is it an error result. Every candidate gets exactly one
// result, in input order: none is lost, none is counted twice.
//
// Candidates wait for a device while the tracker reports live devices of the
// key, busy or not. When it reports none (every server of the key died or
// left), or does not answer at all, for device_wait_timeout seconds, the
// candidates still waiting fail as runtime-device errors: a run never hangs.
//
// Servers load shared objects: give the LocalBuilder shared_object = true
// (else each relocatable object is linked here, one at a time).
#include <memory>
#include <string>

#include "measure/runner.h"

namespace tessera::rpc {

struct RpcRunnerOptions {
  std::string tracker = "127.0.0.1:9190";  // HOST:PORT
  std::string key;                         // the device key
  int priority = 0;                        // of this tuner's requests; higher is served first
  measure::LocalRunnerOptions run;         // the LocalRunner protocol, as on the device
  int max_attempts = 3;                    // devices a candidate may try before it is an error
  double silence_timeout = 5;              // seconds without a word from a measuring server: it is dead
  double device_wait_timeout = 60;         // seconds with no live device of the key (or no tracker) before giving up
  std::string key_file;                    // the fleet's key pair; empty: default_key_file()
};

class RpcRunner : public measure::Runner {
 public:
  explicit RpcRunner(RpcRunnerOptions options, measure::ReferenceFn reference = nullptr);
  ~RpcRunner() override;
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>& builds) override;

 private:
  struct Connection;
  RpcRunnerOptions options_;
  measure::ReferenceFn reference_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace tessera::rpc
