#include "rpc/rpc_runner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <zmq.hpp>

#include "codegen/shared_object.h"
#include "measure/kernel_args.h"
#include "rpc/job.h"
#include "rpc/log.h"
#include "rpc/message.h"
#include "rpc/random_token.h"
#include "rpc/security.h"
#include "rpc/tracker_client.h"
#include "support/read_file.h"
#include "tessera/error.h"

namespace tessera::rpc {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kWho = "rpc runner";
constexpr auto kResendRequests = std::chrono::seconds(2);  // survives a tracker restart
constexpr auto kWaitingNotice = std::chrono::seconds(10);

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// A granted device: one slot of one server, for the rest of the batch.
struct Session {
  std::string server, token;
  int64_t slot = 0;
  std::unique_ptr<zmq::socket_t> socket;
  bool busy = false;
  size_t candidate = 0;  // while busy
  std::string job;       // while busy
  Clock::time_point last_heard;
  std::string name() const { return fmt::format("server {} slot {}", server.substr(0, 8), slot); }
};

}  // namespace

struct RpcRunner::Connection {
  zmq::context_t context;
  KeyPair keys;
  std::unique_ptr<zmq::socket_t> tracker;
  std::string client = random_token();
  uint64_t counter = 0;
};

RpcRunner::RpcRunner(RpcRunnerOptions options, measure::ReferenceFn reference)
    : options_(std::move(options)), reference_(std::move(reference)), connection_(std::make_unique<Connection>()) {
  measure::check_runner_options(options_.run);
  if (options_.key.empty()) throw Error("rpc runner: the device key is empty");
  if (options_.max_attempts < 1) throw Error("rpc runner: max_attempts must be at least 1");
  if (!(options_.silence_timeout > 0) || !(options_.device_wait_timeout > 0))
    throw Error("rpc runner: silence_timeout and device_wait_timeout must be positive seconds");
  connection_->keys = read_key_file(options_.key_file.empty() ? default_key_file() : options_.key_file);
  check_tracker_address(options_.tracker);
  connection_->tracker = connect_to_tracker(connection_->context, options_.tracker, connection_->keys);
}

RpcRunner::~RpcRunner() = default;

std::vector<measure::MeasureResult> RpcRunner::run(const std::vector<measure::MeasureInput>& inputs,
                                                   const std::vector<measure::BuildResult>& builds) {
  if (inputs.size() != builds.size())
    throw Error(fmt::format("RpcRunner::run: {} inputs but {} build results", inputs.size(), builds.size()));
  Connection& c = *connection_;
  const bool check = options_.run.check_correctness && reference_;
  const size_t n = inputs.size();
  std::vector<measure::MeasureResult> results(n);
  std::vector<bool> done(n, false);
  std::vector<int> attempts(n, 0);
  std::vector<std::string> last_failure(n);
  std::deque<size_t> todo;
  size_t remaining = 0;
  for (size_t i = 0; i < n; ++i) {
    if (builds[i].error != measure::ErrorKind::None) {
      results[i] = measure::result_of_failed_build(builds[i]);
      done[i] = true;
    } else {
      todo.push_back(i);
      ++remaining;
    }
  }

  // The jobs' fixed parts, once per DAG: shapes and, when checking, the expected output.
  std::map<const ir::TensorNode*, Job> templates;
  auto job_of = [&](size_t i) {
    if (!inputs[i].accelerator.is_null()) {  // a VTA program: a server with a vta-sim device simulates it
      Job job;
      job.options = options_.run;
      job.options.cores.clear();
      job.id = fmt::format("{}-{}", c.client.substr(0, 8), c.counter++);
      job.function = kVtaProgram;
      const std::string base = std::filesystem::path(builds[i].object_path).filename().string();
      job.name = is_safe_upload_name(base) ? base : "program.json";
      job.object = support::read_file(builds[i].object_path);
      return job;
    }
    const ir::ComputeDAG& dag = inputs[i].dag;
    auto it = templates.find(dag.outputs().at(0).get());
    if (it == templates.end()) {
      Job t;
      t.inputs = measure::tensor_shapes(dag.placeholders());
      t.outputs = measure::tensor_shapes(dag.outputs());
      t.options = options_.run;
      t.options.cores.clear();
      t.options.tolerance = std::max(t.options.tolerance, measure::tf32_tolerance(inputs[i].target.tf32));
      t.check = check;
      if (check) {  // the inputs are made here only to compute the reference
        measure::KernelArguments args = measure::kernel_arguments_of(dag, reference_);
        if (!args.expected) throw Error(args.expected_error);  // the candidate's error, as with LocalRunner
        t.expected.assign(reinterpret_cast<const char*>(args.expected->data()), args.expected->size() * sizeof(float));
      }
      it = templates.emplace(dag.outputs().at(0).get(), std::move(t)).first;
    }
    Job job = it->second;
    job.id = fmt::format("{}-{}", c.client.substr(0, 8), c.counter++);
    job.function = builds[i].function_name;
    const std::string base = std::filesystem::path(builds[i].object_path).filename().string();
    job.name = is_safe_upload_name(base) ? base : "kernel.o";
    job.object = support::read_file(builds[i].object_path);
    // The server loads shared objects only (it has the runtime, not the compiler).
    if (!measure::is_shared_object(job.object)) job.object = codegen::link_shared_object({job.object});
    return job;
  };

  auto finish = [&](size_t i, measure::MeasureResult r) {
    if (done[i]) return;  // never twice
    r.all_cost += builds[i].time_cost;
    r.timestamp = measure::unix_time_now();
    results[i] = std::move(r);
    done[i] = true;
    --remaining;
  };
  // The device of candidate i failed it (died, went silent, refused): another device tries, within bounds.
  auto retry_or_fail = [&](size_t i, const std::string& why) {
    last_failure[i] = why;
    if (++attempts[i] < options_.max_attempts) {
      todo.push_front(i);
      return;
    }
    measure::MeasureResult r;
    r.error = measure::ErrorKind::RuntimeDevice;
    r.error_message = fmt::format("no device measured it in {} attempts; last: {}", attempts[i], why);
    finish(i, std::move(r));
  };

  std::vector<Session> sessions;
  std::set<std::string> requests;  // outstanding request ids
  auto last_resend = Clock::now(), last_notice = Clock::now();
  // What the tracker last said of the key, and when there last was a device
  // of it (a session of ours, a grant, or the tracker counting one).
  int64_t devices_reported = -1;  // -1: the tracker has not answered this run
  auto last_device_seen = Clock::now();
  auto give_up_waiting = [&](const std::string& why) {
    while (!todo.empty()) {
      const size_t i = todo.front();
      todo.pop_front();
      measure::MeasureResult r;
      r.error = measure::ErrorKind::RuntimeDevice;
      r.error_message = last_failure[i].empty() ? why : why + "; before that: " + last_failure[i];
      finish(i, std::move(r));
    }
  };
  auto waiting_reason = [&] {
    if (devices_reported < 0) return fmt::format("tracker {} has not answered (is it running?)", options_.tracker);
    if (devices_reported == 0)
      return fmt::format("tracker {} has no live device of key '{}'", options_.tracker, options_.key);
    return fmt::format("all {} devices of key '{}' at tracker {} are busy", devices_reported, options_.key,
                       options_.tracker);
  };
  auto to_tracker = [&](nlohmann::json h) { send(*c.tracker, Message{std::move(h), {}}); };
  auto close = [&](Session& s) {
    send(*s.socket, Message{{{"type", "close"}, {"token", s.token}}, {}});
    s.socket->set(zmq::sockopt::linger, 200);  // let the close go out
    s.socket.reset();
  };

  while (remaining > 0) {
    // Idle devices take the next candidates.
    for (auto& s : sessions) {
      if (!s.socket || s.busy || todo.empty()) continue;
      const size_t i = todo.front();
      todo.pop_front();
      Job job;
      try {
        job = job_of(i);
      } catch (const std::exception& e) {
        measure::MeasureResult r;
        r.error = measure::ErrorKind::Unknown;
        r.error_message = e.what();
        finish(i, std::move(r));
        continue;
      }
      job.token = s.token;
      if (!send(*s.socket, encode_job(job))) {
        retry_or_fail(i, s.name() + ": cannot send to it");
        s.socket.reset();
        continue;
      }
      s.busy = true;
      s.candidate = i;
      s.job = job.id;
      s.last_heard = Clock::now();
    }
    std::erase_if(sessions, [](const Session& s) { return !s.socket; });

    // As many requests outstanding as candidates without a device.
    size_t idle = 0;
    for (const auto& s : sessions) idle += !s.busy;
    const size_t want = todo.size() > idle ? todo.size() - idle : 0;
    while (requests.size() < want) {
      const std::string id = std::to_string(c.counter++);
      requests.insert(id);
      to_tracker({{"type", "request"}, {"client", c.client}, {"request", id}, {"key", options_.key},
                  {"priority", options_.priority}});
    }
    while (requests.size() > want) {
      to_tracker({{"type", "cancel"}, {"client", c.client}, {"request", *requests.begin()}});
      requests.erase(requests.begin());
    }
    const auto now = Clock::now();
    if (!requests.empty() && now - last_resend > kResendRequests) {
      for (const auto& id : requests)
        to_tracker({{"type", "request"}, {"client", c.client}, {"request", id}, {"key", options_.key},
                    {"priority", options_.priority}});
      last_resend = now;
    }
    if (!sessions.empty() || devices_reported > 0) last_device_seen = now;
    if (sessions.empty() && !todo.empty() && now - last_device_seen > seconds(options_.device_wait_timeout)) {
      give_up_waiting(fmt::format("no device for {:g} s: {}", options_.device_wait_timeout, waiting_reason()));
      log_line(kWho, fmt::format("gave up waiting for a device: {}", waiting_reason()));
      continue;
    }
    if (sessions.empty() && now - last_notice > kWaitingNotice) {
      log_line(kWho, fmt::format("waiting for a device: {} ({} candidates left)", waiting_reason(), remaining));
      last_notice = now;
    }

    std::vector<zmq::pollitem_t> items{{c.tracker->handle(), 0, ZMQ_POLLIN, 0}};
    for (auto& s : sessions) items.push_back({s.socket->handle(), 0, ZMQ_POLLIN, 0});
    poll_sockets(items.data(), items.size(), std::chrono::milliseconds(50));

    for (Received r; !(r = receive(*c.tracker, false, 0)).empty();) {
      if (!r.message) continue;
      if (r.message->type() == "queued") {
        const auto& h = r.message->header;
        if (h.value("key", "") == options_.key && h.contains("devices") && h["devices"].is_number_integer())
          devices_reported = h["devices"].get<int64_t>();
        continue;
      }
      if (r.message->type() != "granted") continue;
      try {
        const auto& h = r.message->header;
        Session s;
        s.server = string_field(h, "server", 64);
        s.token = string_field(h, "token", 64);
        s.slot = integer_field(h, "slot", 0, 1 << 20);
        s.socket = std::make_unique<zmq::socket_t>(c.context, zmq::socket_type::dealer);
        s.socket->set(zmq::sockopt::linger, 0);
        make_curve_client(*s.socket, c.keys, string_field(h, "public_key", 40));
        s.socket->connect(string_field(h, "address", 256));
        const bool wanted = requests.erase(string_field(h, "request", 64)) > 0;
        if (!wanted || todo.empty()) close(s);  // a grant for a cancelled request: give it back
        else sessions.push_back(std::move(s));
      } catch (const std::exception& e) {
        log_line(kWho, std::string("ignored a malformed grant: ") + e.what());
      }
    }
    for (auto& s : sessions) {
      for (Received r; s.socket && !(r = receive(*s.socket, false, 1 << 16)).empty();) {
        if (!r.message || !s.busy || r.message->header.value("job", "") != s.job) continue;  // late or stray
        s.last_heard = Clock::now();
        const std::string type = r.message->type();
        if (type == "result") {
          try {
            finish(s.candidate, result_from_json(r.message->header.at("result")));
          } catch (const std::exception& e) {
            retry_or_fail(s.candidate, s.name() + ": a malformed result: " + e.what());
          }
          s.busy = false;
        } else if (type == "refused") {
          retry_or_fail(s.candidate, s.name() + " refused the job: " + r.message->header.value("reason", "?"));
          s.busy = false;
          close(s);
        }
      }
      if (s.socket && s.busy && Clock::now() - s.last_heard > seconds(options_.silence_timeout)) {
        log_line(kWho, fmt::format("{} silent for {:g} s while measuring: its candidate goes to another device",
                                   s.name(), options_.silence_timeout));
        retry_or_fail(s.candidate, fmt::format("{} went silent (dead?)", s.name()));
        s.socket.reset();
      }
    }
  }
  for (auto& s : sessions)
    if (s.socket) close(s);
  for (const auto& id : requests) to_tracker({{"type", "cancel"}, {"client", c.client}, {"request", id}});
  return results;
}

}  // namespace tessera::rpc
