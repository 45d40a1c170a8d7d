// Seed 003 over RPC: a tracker and two servers whose devices are VTA
// simulators under the key "pynq" (the query table shows both), a network
// tuned for vta through them, one server killed with SIGKILL mid-run: the
// tuning finishes on the other and no trial is lost (every search trial in
// the log, each with the simulated time its config gives). A CPU server
// given a VTA program, and a VTA server given a CPU kernel, say so.
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "autotvm/vta/conv2d_packed.h"
#include "driver/tune_network.h"
#include "fleet.h"
#include "measure/vta_measure.h"
#include "records/log_file.h"
#include "rpc/rpc_runner.h"
#include "testing/small_resnet.h"

namespace tessera::rpc {
namespace {

using testing::Fleet;

RpcRunnerOptions vta_runner_options(const Fleet& fleet) {
  RpcRunnerOptions o;
  o.tracker = fleet.tracker_address();
  o.key = "pynq";
  o.key_file = fleet.key_file();
  o.run = {.repeat = 1, .timeout = 10};
  o.silence_timeout = 2;
  return o;
}

// Measures through `inner`; once `after` candidates have been measured, calls
// `kill` on a thread of its own while the next batch is being measured.
class KillingRunner : public measure::Runner {
 public:
  KillingRunner(measure::Runner& inner, size_t after, std::function<void()> kill)
      : inner_(inner), after_(after), kill_(std::move(kill)) {}
  std::vector<measure::MeasureResult> run(const std::vector<measure::MeasureInput>& inputs,
                                          const std::vector<measure::BuildResult>& builds) override {
    std::thread killer;
    if (!killed_ && measured_ >= after_) {
      killed_ = true;
      killer = std::thread(kill_);
    }
    std::vector<measure::MeasureResult> results = inner_.run(inputs, builds);
    if (killer.joinable()) killer.join();
    measured_ += inputs.size();
    return results;
  }
  bool killed() const { return killed_; }

 private:
  measure::Runner& inner_;
  size_t after_;
  std::function<void()> kill_;
  size_t measured_ = 0;
  bool killed_ = false;
};

TEST(RpcFleetVta, TheSeedsTuningOverTwoSimulatorsSurvivesOneKilled) {
  Fleet fleet("vta");
  fleet.start_tracker();
  for (int i = 0; i < 2; ++i) fleet.start_server("pynq", 1, {"--device", "vta-sim"});
  ASSERT_TRUE(fleet.wait_for_devices("pynq", 2, 2)) << fleet.tracker().log();
  const std::vector<KeyStatus> table = fleet.status();
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table[0].key, "pynq");
  EXPECT_EQ(table[0].total, 2);

  RpcRunner rpc(vta_runner_options(fleet));
  // Server 1 is killed while the batch after the first 60 trials is being
  // measured: mid-run by construction, whatever the machine's speed (the kill
  // lands on a job in flight or on the next one sent there; either way its
  // candidates must reach the other server).
  KillingRunner runner(rpc, 60, [&] { EXPECT_NE(fleet.server(1).kill(SIGKILL), -1); });
  driver::TuneOptions o;
  o.log = fleet.dir() + "/vta.log";
  o.tuner = "random";
  o.trials = 60;
  o.early_stopping = 0;
  o.confirm_leaders = 0;  // every line of the log is a search trial
  o.evaluate = false;
  o.runner = &runner;
  std::ostringstream out, warnings;
  auto tuning = std::async(std::launch::async, [&] {
    return driver::tune_network(tessera::testing::small_resnet(), target::Target::parse("vta"), o, out, warnings);
  });
  ASSERT_EQ(tuning.wait_for(std::chrono::seconds(120)), std::future_status::ready) << "the tuning hangs";
  ASSERT_TRUE(runner.killed()) << out.str();
  const driver::TuneResult result = tuning.get();
  EXPECT_EQ(result.trials, 5 * 60) << out.str();

  std::ostream quiet(nullptr);
  const std::vector<records::Record> log = records::load_records(o.log, quiet);
  EXPECT_EQ(log.size(), 5u * 60);  // no trial lost
  int valid = 0;
  for (const records::Record& r : log) {
    // A trial is either measured or a config the accelerator cannot hold;
    // never a device error: the dead server's candidates went to the other.
    EXPECT_TRUE(r.valid() || r.result.error == measure::ErrorKind::Instantiation) << r.result.error_message;
    valid += r.valid();
  }
  EXPECT_GT(valid, 5 * 30);
  // A surviving record costs what the simulator in this process says.
  for (const records::Record& r : log) {
    if (!r.valid()) continue;
    const autotvm::Task task =
        autotvm::vta::conv2d_packed_task(ops::conv2d_packed_from_json(r.workload), target::Target::parse("vta"));
    measure::VtaBuilder builder;
    measure::VtaRunner local(1);
    const std::vector<measure::MeasureInput> in = {task.measure_input(task.space.get(*r.config_index))};
    EXPECT_DOUBLE_EQ(local.run(in, builder.build(in))[0].costs[0], r.result.costs[0]);
    break;
  }
  EXPECT_NE(fleet.server(0).log().find("measurements"), std::string::npos);
}

TEST(RpcFleetVta, ADeviceOfTheOtherKindSaysSo) {
  Fleet fleet("vta-kinds");
  fleet.start_tracker();
  fleet.start_server("pynq");  // a CPU server under the VTA key: a misconfigured fleet
  ASSERT_TRUE(fleet.wait_for_devices("pynq", 1, 1)) << fleet.tracker().log();
  ops::Conv2dPackedAttrs a;
  a.in_channels = a.out_channels = 32, a.height = a.width = 8, a.kernel_h = a.kernel_w = 3, a.pad_h = a.pad_w = 1;
  const autotvm::Task task = autotvm::vta::conv2d_packed_task(a, target::Target::parse("vta"));
  const std::vector<measure::MeasureInput> in = {task.measure_input(task.space.fallback())};
  measure::VtaBuilder builder;
  RpcRunnerOptions options = vta_runner_options(fleet);
  options.max_attempts = 1;
  RpcRunner runner(options);
  const measure::MeasureResult r = runner.run(in, builder.build(in))[0];
  EXPECT_FALSE(r.valid());
  EXPECT_NE(r.error_message.find("a VTA program needs a server started with --device vta-sim"), std::string::npos)
      << r.error_message;
}

}  // namespace
}  // namespace tessera::rpc
