// The RPC layer end to end on loopback: a tracker and servers as processes,
// tuners as RpcRunners in this process. Devices die, the tracker restarts,
// strangers knock: no measurement is lost or counted twice.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <future>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include <zmq.hpp>

#include "../measure/measure_test_util.h"
#include "fleet.h"
#include "rpc/message.h"
#include "rpc/rpc_runner.h"
#include "rpc/tracker_client.h"

namespace tessera::rpc {
namespace {

using measure::BuildResult;
using measure::ErrorKind;
using measure::MeasureInput;
using measure::MeasureResult;
using testing::Fleet;

// One build of the add kernel (measure_test_util.h), measured n times.
struct Batch {
  std::vector<MeasureInput> inputs;
  std::vector<BuildResult> builds;
};

class RpcFleet : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    builder_ = std::make_unique<measure::LocalBuilder>();
    build_ = builder_->build({{measure::testing::add_dag(), schedule::Trace()}})[0];
  }
  static void TearDownTestSuite() { builder_.reset(); }
  void SetUp() override { ASSERT_EQ(build_.error, ErrorKind::None) << build_.error_message; }

  static Batch batch(size_t n) {
    Batch b;
    for (size_t i = 0; i < n; ++i) {
      b.inputs.push_back({measure::testing::add_dag(), schedule::Trace()});
      b.builds.push_back(build_);
    }
    return b;
  }
  // Each measurement takes >= 2 x min_repeat_ms: long enough to kill things mid-batch.
  static RpcRunnerOptions runner_options(const Fleet& fleet, const std::string& key, int min_repeat_ms = 0) {
    RpcRunnerOptions o;
    o.tracker = fleet.tracker_address();
    o.key = key;
    o.key_file = fleet.key_file();
    o.run = {.repeat = 2, .min_repeat_ms = min_repeat_ms, .timeout = 10, .check_correctness = true};
    o.silence_timeout = 2;
    return o;
  }

  static std::unique_ptr<measure::LocalBuilder> builder_;
  static BuildResult build_;
};
std::unique_ptr<measure::LocalBuilder> RpcFleet::builder_;
BuildResult RpcFleet::build_;

void expect_all_measured(const std::vector<MeasureResult>& results, size_t n) {
  ASSERT_EQ(results.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(results[i].valid()) << i << ": " << results[i].error_message;
    EXPECT_EQ(results[i].costs.size(), 2u) << i;
  }
}

TEST_F(RpcFleet, QueryShowsTheDevicesOfEachKeyInTheSeedsTable) {
  Fleet fleet("query");
  fleet.start_tracker();
  fleet.start_server("zen", 1);
  fleet.start_server("zen", 2);
  fleet.start_server("arm", 1);
  ASSERT_TRUE(fleet.wait_for_devices("zen", 3, 3)) << fleet.tracker().log();
  ASSERT_TRUE(fleet.wait_for_devices("arm", 1, 1));
  EXPECT_EQ(format_queue_status(fleet.status()),
            "Queue Status\n"
            "----------------------------------\n"
            "key          total  free  pending\n"
            "----------------------------------\n"
            "arm          1      1     0\n"
            "zen          3      3     0\n"
            "----------------------------------\n");
  EXPECT_NE(fleet.tracker().log().find("bind to 127.0.0.1:"), std::string::npos);

  // A server that stops leaves the pool; one killed leaves it when its heartbeats stop.
  fleet.server(2).kill(SIGTERM);
  EXPECT_TRUE(fleet.wait_for_devices("arm", 0, 0));
  fleet.server(1).kill(SIGKILL);
  EXPECT_TRUE(fleet.wait_for_devices("zen", 1, 1)) << fleet.tracker().log();
  EXPECT_NE(fleet.tracker().log().find("no heartbeat"), std::string::npos) << fleet.tracker().log();
}

TEST_F(RpcFleet, ABatchRunsInParallelOnEveryDeviceWithOneResultPerCandidate) {
  Fleet fleet("batch");
  ASSERT_TRUE(fleet.start("zen", 3));
  RpcRunner runner(runner_options(fleet, "zen", /*min_repeat_ms=*/20));
  Batch b = batch(9);
  expect_all_measured(runner.run(b.inputs, b.builds), 9);
  // Every server measured some of them, and every device is free again.
  EXPECT_TRUE(fleet.wait_for_devices("zen", 3, 3));
  for (int i = 0; i < 3; ++i) {
    const std::string log = fleet.server(i).log();
    EXPECT_NE(log.find("session ended after"), std::string::npos) << log;
    EXPECT_EQ(log.find("after 0 measurements"), std::string::npos) << log;
  }
}

TEST_F(RpcFleet, AWrongAnswerOnTheDeviceIsAWrongAnswerResult) {
  Fleet fleet("wrong");
  ASSERT_TRUE(fleet.start("zen", 1));
  RpcRunner runner(runner_options(fleet, "zen"), measure::testing::add_reference(/*offset=*/1));
  Batch b = batch(2);
  auto results = runner.run(b.inputs, b.builds);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.error, ErrorKind::WrongAnswer) << r.error_message;
    EXPECT_NE(r.error_message.find("first mismatch"), std::string::npos) << r.error_message;
  }
  RpcRunner right(runner_options(fleet, "zen"), measure::testing::add_reference());
  expect_all_measured(right.run(b.inputs, b.builds), 2);
}

TEST_F(RpcFleet, AServerKilledMidBatchLosesNoCandidate) {
  Fleet fleet("kill");
  ASSERT_TRUE(fleet.start("zen", 3));
  RpcRunner runner(runner_options(fleet, "zen", /*min_repeat_ms=*/100));
  Batch b = batch(15);
  auto running = std::async(std::launch::async, [&] { return runner.run(b.inputs, b.builds); });
  // Kill a server while it measures (each measurement takes >= 200 ms).
  ASSERT_TRUE(testing::wait_until([&] { auto s = fleet.status(); return s.size() == 1 && s[0].free == 0; }, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  fleet.server(1).kill(SIGKILL);
  auto results = running.get();
  expect_all_measured(results, 15);  // each once: results are per candidate, and all are valid
  EXPECT_TRUE(fleet.wait_for_devices("zen", 2, 2)) << fleet.tracker().log();
}

// A dealer that speaks CURVE as `keys` to the peer whose public key is
// `peer_key`, connected to `address` ("tcp://..."); it drops what it has
// not sent when closed.
zmq::socket_t curve_dealer(zmq::context_t& context, const KeyPair& keys, const std::string& peer_key,
                           const std::string& address) {
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  make_curve_client(socket, keys, peer_key);
  socket.connect(address);
  return socket;
}

// The runner's whole batch, bounded: a run that outlives `seconds` is a hang.
std::vector<MeasureResult> run_bounded(RpcRunner& runner, const Batch& b, double seconds,
                                       const std::function<void()>& meanwhile = [] {}) {
  auto running = std::async(std::launch::async, [&] { return runner.run(b.inputs, b.builds); });
  meanwhile();
  if (running.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << "the runner still waits after " << seconds << " s";
    std::_Exit(1);  // the future's destructor would wait for ever
  }
  return running.get();
}

TEST_F(RpcFleet, ACandidateWhoseDevicesAllDieIsAnErrorNotAHang) {
  // Killed while measuring, or while the tracker's grant is on its way: the
  // latter leaves no session to go silent, only a request no device serves.
  for (int delay_ms : {300, 0}) {
    Fleet fleet("alldie" + std::to_string(delay_ms));
    ASSERT_TRUE(fleet.start("zen", 1));
    RpcRunnerOptions o = runner_options(fleet, "zen", /*min_repeat_ms=*/400);
    o.max_attempts = 1;
    o.device_wait_timeout = 2;
    RpcRunner runner(o);
    auto results = run_bounded(runner, batch(1), 30, [&] {
      ASSERT_TRUE(testing::wait_until([&] { auto s = fleet.status(); return s.size() == 1 && s[0].free == 0; }, 10));
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      fleet.server(0).kill(SIGKILL);
    });
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].error, ErrorKind::RuntimeDevice);
    const std::string& why = results[0].error_message;
    EXPECT_TRUE(why.find("went silent") != std::string::npos || why.find("no live device of key 'zen'") != std::string::npos)
        << why;
  }
}

TEST_F(RpcFleet, ADeviceFrozenBeforeItReservesItsGrantIsAnErrorNotAHang) {
  Fleet fleet("frozen");
  ASSERT_TRUE(fleet.start("zen", 1));
  fleet.server(0).freeze();  // registered, then silent: the tracker offers it a grant it never answers
  RpcRunnerOptions o = runner_options(fleet, "zen");
  o.device_wait_timeout = 2;
  RpcRunner runner(o);
  // Bounded: the tracker drops the frozen server after its heartbeat timeout
  // (1 s), and the runner gives up 2 s after it last saw a device.
  auto results = run_bounded(runner, batch(2), 30);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.error, ErrorKind::RuntimeDevice);
    EXPECT_NE(r.error_message.find("no live device of key 'zen'"), std::string::npos) << r.error_message;
  }
}

TEST_F(RpcFleet, NoTrackerIsAnErrorNamingItNotAWait) {
  Fleet fleet("notracker");  // keys and a port, but nothing listens there
  RpcRunnerOptions o = runner_options(fleet, "zen");
  o.device_wait_timeout = 1;
  RpcRunner runner(o);
  auto results = run_bounded(runner, batch(1), 20);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error, ErrorKind::RuntimeDevice);
  EXPECT_NE(results[0].error_message.find("tracker " + fleet.tracker_address() + " has not answered"),
            std::string::npos)
      << results[0].error_message;
}

TEST_F(RpcFleet, TheRequestsOfATunerThatDiedLeaveTheQueue) {
  Fleet fleet("deadtuner");
  fleet.start_tracker({"--request-timeout", "1"});
  const KeyPair keys = fleet.keys();
  {
    // A tuner that asks for three devices of a key nobody serves, then dies
    // without cancelling: it never sends its requests again.
    zmq::context_t context;
    zmq::socket_t tuner = curve_dealer(context, keys, keys.public_key, "tcp://" + fleet.tracker_address());
    for (const char* id : {"1", "2", "3"})
      send(tuner, Message{{{"type", "request"}, {"client", "dead"}, {"request", id}, {"key", "gpu"}, {"priority", 0}}, {}});
    // Each request is answered with how many devices of its key are alive.
    Received r;
    ASSERT_TRUE(testing::wait_until([&] { return !(r = receive(tuner, false, 0)).empty(); }, 10));
    ASSERT_TRUE(r.message.has_value()) << r.error;
    EXPECT_EQ(r.message->type(), "queued");
    EXPECT_EQ(r.message->header.value("devices", int64_t{-1}), 0);
    ASSERT_TRUE(testing::wait_until([&] { auto s = fleet.status(); return s.size() == 1 && s[0].pending == 3; }, 10));
  }
  // The key leaves the table with its last request (no server has it).
  EXPECT_TRUE(testing::wait_until([&] { return fleet.status().empty(); }, 10)) << fleet.tracker().log();
  // A server that comes later is free, not held by the dead tuner's grants.
  fleet.start_server("gpu");
  EXPECT_TRUE(fleet.wait_for_devices("gpu", 1, 1));
}

TEST_F(RpcFleet, ATrackerRestartMidRunIsSurvived) {
  Fleet fleet("restart");
  ASSERT_TRUE(fleet.start("zen", 2));
  RpcRunner runner(runner_options(fleet, "zen", /*min_repeat_ms=*/50));
  Batch b = batch(6);
  // Batch 1 is under way when the tracker dies; batch 2 asks for devices
  // while it is down; the restarted tracker learns the servers again.
  auto running = std::async(std::launch::async, [&] {
    auto first = runner.run(b.inputs, b.builds);
    auto second = runner.run(b.inputs, b.builds);
    first.insert(first.end(), second.begin(), second.end());
    return first;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  fleet.tracker().kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  fleet.start_tracker();
  expect_all_measured(running.get(), 12);
  EXPECT_TRUE(fleet.wait_for_devices("zen", 2, 2)) << fleet.tracker().log();
}

TEST_F(RpcFleet, RequestsWaitWhileEveryDeviceIsBusyThenRun) {
  Fleet fleet("wait");
  fleet.start_tracker();
  RpcRunner runner(runner_options(fleet, "zen"));
  Batch b = batch(2);
  auto running = std::async(std::launch::async, [&] { return runner.run(b.inputs, b.builds); });
  // No device of the key yet: the requests wait in the queue.
  ASSERT_TRUE(testing::wait_until([&] { auto s = fleet.status(); return s.size() == 1 && s[0].pending == 2; }, 10));
  EXPECT_EQ(running.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  fleet.start_server("zen");
  expect_all_measured(running.get(), 2);
}

TEST_F(RpcFleet, StrangersAreRefusedWithALogLine) {
  Fleet fleet("auth");
  ASSERT_TRUE(fleet.start("zen", 1));
  const KeyPair fleet_keys = fleet.keys();
  // A client with a key of its own, which knows the tracker's public key.
  KeyPair stranger = generate_key_pair();
  stranger.public_key = generate_key_pair().public_key;  // and one that does not even hold its secret
  for (const KeyPair& keys : {generate_key_pair(), stranger}) {
    zmq::context_t context;
    zmq::socket_t socket = curve_dealer(context, keys, fleet_keys.public_key, "tcp://" + fleet.tracker_address());
    send(socket, Message{{{"type", "summary"}}, {}});
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(1000)), 0) << "the tracker answered a stranger";
  }
  // A client without CURVE at all.
  {
    zmq::context_t context;
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.connect("tcp://" + fleet.tracker_address());
    send(socket, Message{{{"type", "summary"}}, {}});
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(1000)), 0) << "the tracker answered a client without CURVE";
  }
  const std::string log = fleet.tracker().log();
  EXPECT_NE(log.find("is not allowed"), std::string::npos) << log;
  EXPECT_NE(log.find("handshake failed"), std::string::npos) << log;
  // The fleet still works.
  EXPECT_TRUE(fleet.wait_for_devices("zen", 1, 1));
}

// libzmq retries a refused handshake for ever: without a check the server
// said "serving" while only the tracker's log showed it refused.
TEST_F(RpcFleet, AServerWhoseKeyTheTrackerRefusesStopsWithOneClearLine) {
  Fleet fleet("otherkey");
  fleet.start_tracker();
  const std::string other_key_file = fleet.key_file() + ".other";
  write_key_file(other_key_file, generate_key_pair());
  fleet.start_server("zen", 1, {}, other_key_file);
  testing::CliProcess& server = fleet.server(0);
  for (int i = 0; i < 200 && server.alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(server.alive()) << "the refused server is still running:\n" << server.log();
  const std::string log = server.log();
  EXPECT_NE(log.find("the tracker at " + fleet.tracker_address() + " refuses this server"), std::string::npos) << log;
  EXPECT_NE(log.find(other_key_file), std::string::npos) << log;
  EXPECT_EQ(log.find("registered with the tracker"), std::string::npos) << log;
  // A server holding the fleet's key still joins.
  fleet.start_server("zen");
  EXPECT_TRUE(fleet.wait_for_devices("zen", 1, 1));
}

TEST_F(RpcFleet, AThousandMalformedMessagesLeaveTrackerAndServerUp) {
  Fleet fleet("fuzz");
  ASSERT_TRUE(fleet.start("zen", 1));
  const KeyPair keys = fleet.keys();
  zmq::context_t context;
  zmq::socket_t tracker = curve_dealer(context, keys, keys.public_key, "tcp://" + fleet.tracker_address());
  std::mt19937 random(7);
  auto junk = [&](size_t max) {
    std::string s(random() % max, '\0');
    for (char& c : s) c = static_cast<char>(random());
    return s;
  };
  const std::vector<std::string> headers = {
      "", "{", "[]", "null", "{\"type\":7}", "{\"type\":\"register\"}", "{\"type\":\"heartbeat\",\"server\":[]}",
      "{\"type\":\"request\",\"client\":\"c\",\"request\":\"r\",\"key\":\"zen\",\"priority\":1e400}",
      "{\"type\":\"register\",\"server\":\"s\",\"key\":\"k\",\"address\":\"a\",\"public_key\":\"p\",\"slots\":-1}",
      "{\"type\":\"register\",\"server\":\"s\",\"key\":\"k\",\"address\":\"a\",\"public_key\":\"p\",\"slots\":99999999}",
      "{\"type\":\"free\",\"server\":\"nobody\",\"slot\":3}", "{\"type\":\"reserved\",\"server\":\"x\"}",
      "{\"type\":\"cancel\"}", "{\"type\":\"no-such-type\"}", std::string(200000, '['),
      "{\"type\":\"summary\",\"x\":" + std::string(100, '[') + std::string(100, ']') + "}"};
  int sent = 0;
  for (int i = 0; i < 1200; ++i) {
    std::vector<std::string> frames;
    switch (i % 4) {
      case 0: frames = {headers[random() % headers.size()]}; break;
      case 1: frames = {junk(300)}; break;
      case 2: frames = {"{\"type\":\"summary\"}", junk(100), junk(100), junk(100)}; break;  // too many frames
      default: frames = {headers[random() % headers.size()], junk(50)}; break;
    }
    for (size_t f = 0; f < frames.size(); ++f)
      tracker.send(zmq::buffer(frames[f]), f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    ++sent;
  }
  EXPECT_GE(sent, 1000);
  // The same junk at the server's session socket.
  const std::string server_log = fleet.server(0).log();
  const auto at = server_log.find("serving at ");
  ASSERT_NE(at, std::string::npos) << server_log;
  const std::string address = server_log.substr(at + 11, server_log.find(',', at) - at - 11);
  zmq::socket_t server = curve_dealer(context, keys, keys.public_key, address);
  for (int i = 0; i < 1000; ++i) {
    const std::string h = i % 2 ? junk(200)
                                : "{\"type\":\"run\",\"token\":\"t\",\"job\":\"j\",\"name\":\"../../etc/passwd\"}";
    server.send(zmq::buffer(h), zmq::send_flags::none);
  }
  // Both still serve, and said why they dropped what they dropped.
  EXPECT_TRUE(fleet.wait_for_devices("zen", 1, 1, 20)) << fleet.tracker().log();
  EXPECT_TRUE(fleet.tracker().alive());
  EXPECT_TRUE(fleet.server(0).alive());
  EXPECT_NE(fleet.tracker().log().find("dropped a malformed message"), std::string::npos);
  RpcRunner runner(runner_options(fleet, "zen"));
  Batch b = batch(2);
  expect_all_measured(runner.run(b.inputs, b.builds), 2);
}

// (config index, error) of every trial of a tuning log, and how many leader
// confirmations follow them (which leaders depends on timing noise).
struct TuningLog {
  std::multiset<std::pair<int64_t, std::string>> trials;
  int confirmations = 0;
};

TuningLog read_tuning_log(const std::string& log) {
  TuningLog t;
  std::istringstream lines(testing::read_text(log));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("confirmed", false)) ++t.confirmations;
    else t.trials.emplace(j.at("config_index").get<int64_t>(), j.at("result").at("error").get<std::string>());
  }
  return t;
}

TEST_F(RpcFleet, TuneOpOverRpcLogsWhatALocalRunLogs) {
  Fleet fleet("tuneop");
  ASSERT_TRUE(fleet.start("zen", 2));
  const std::vector<std::string> tune = {"tune-op", "conv2d", "--input", "1x8x10x10", "--weight", "16x8x3x3",
                                         "--pad", "1", "--tuner", "random", "--seed", "5", "--trials", "10",
                                         "--threads", "1", "--check", "true", "--confirm-leaders", "2"};
  auto run = [&](const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> args = tune;
    const std::string log = fleet.dir() + "/" + name + ".log";
    args.insert(args.end(), {"--log", log});
    args.insert(args.end(), more.begin(), more.end());
    testing::CliProcess p(args, fleet.dir() + "/" + name + ".out");
    EXPECT_TRUE(testing::wait_until([&] { return !p.alive(); }, 120)) << p.log();
    EXPECT_NE(p.log().find("Done."), std::string::npos) << p.log();
    return read_tuning_log(log);
  };
  const auto local = run("local", {});
  const auto remote = run("remote", {"--runner", "rpc", "--key", "zen", "--tracker", fleet.tracker_address(),
                                     "--key-file", fleet.key_file()});
  // The same configs (the random tuner's seed), each measured once, as valid
  // remotely as locally; then the same number of leader confirmations.
  EXPECT_EQ(local.trials.size(), 10u);
  EXPECT_EQ(remote.trials, local.trials);
  EXPECT_EQ(local.confirmations, 2);
  EXPECT_EQ(remote.confirmations, 2);
}

}  // namespace
}  // namespace tessera::rpc
