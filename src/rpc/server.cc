#include "rpc/server.h"

#include <sched.h>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zmq.hpp>

#include "measure/isolated_run.h"
#include "measure/runner.h"
#include "rpc/job.h"
#include "rpc/log.h"
#include "rpc/message.h"
#include "rpc/random_token.h"
#include "rpc/security.h"
#include "rpc/tracker_client.h"
#include "runtime/vta_device.h"
#include "support/read_file.h"
#include "tessera/error.h"

namespace tessera::rpc {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kWho = "server";
constexpr const char* kResults = "inproc://tessera-server-results";

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// One device: a thread that measures one job at a time, so the main loop
// keeps answering heartbeats and sessions while a kernel runs.
class SlotWorker {
 public:
  SlotWorker(zmq::context_t& context, int index, std::vector<int> cores, std::string device)
      : index_(index), cores_(std::move(cores)), device_(std::move(device)),
        thread_([this, &context] { loop(context); }) {}
  ~SlotWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  const std::vector<int>& cores() const { return cores_; }
  void start(Job job, std::string object_path) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = std::move(job);
      object_path_ = std::move(object_path);
    }
    wake_.notify_all();
  }

 private:
  void loop(zmq::context_t& context) {
    zmq::socket_t out(context, zmq::socket_type::push);
    out.set(zmq::sockopt::linger, 0);
    out.connect(kResults);
    for (;;) {
      Job job;
      std::string path;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return quit_ || job_.has_value(); });
        if (quit_) return;
        job = std::move(*job_);
        job_.reset();
        path = object_path_;
      }
      const auto start = Clock::now();
      measure::MeasureResult r = run(job, path);
      r.all_cost = std::chrono::duration<double>(Clock::now() - start).count();
      std::error_code ec;
      std::filesystem::remove(path, ec);
      send(out, Message{{{"type", "done"}, {"slot", index_}, {"job", job.id}, {"result", result_to_json(r)}}, {}});
    }
  }

  measure::MeasureResult run(const Job& job, const std::string& path) {
    if (device_ == kVtaSimulator || job.function == kVtaProgram) return simulate(job, path);
    // Inputs are made from their shapes: the same values the tuner's reference saw.
    measure::KernelArguments& args = arguments_for(job);
    if (job.check) {
      args.expected.emplace(job.outputs[0]);
      std::memcpy(args.expected->data(), job.expected.data(), job.expected.size());
    } else {
      args.expected.reset();
    }
    measure::LocalRunnerOptions options = job.options;
    options.cores = cores_;
    if (options.num_threads == 0 && !cores_.empty()) options.num_threads = static_cast<int>(cores_.size());
    return measure::run_isolated(path, job.function, args, options, job.check);
  }

  // A VTA program on the simulator: its simulated time, every repeat alike (it is deterministic).
  measure::MeasureResult simulate(const Job& job, const std::string& path) {
    measure::MeasureResult r;
    if (device_ != kVtaSimulator || job.function != kVtaProgram) {
      r.error = measure::ErrorKind::RuntimeDevice;
      r.error_message = device_ == kVtaSimulator
                            ? "this server's device is a VTA simulator: it runs VTA programs, not CPU kernels"
                            : "this server's device is a CPU: a VTA program needs a server started with --device vta-sim";
      return r;
    }
    try {
      r.costs.assign(static_cast<size_t>(std::max(1, job.options.repeat)),
                     runtime::simulated_seconds_of_program(support::read_file(path), "VTA program " + job.name));
    } catch (const std::exception& e) {
      r.error = measure::ErrorKind::RuntimeDevice;
      r.error_message = e.what();
    }
    return r;
  }

  // The last job's arguments, kept: the candidates of one task share them.
  measure::KernelArguments& arguments_for(const Job& job) {
    auto same_inputs = [&] {
      if (arguments_->inputs.size() != job.inputs.size()) return false;
      for (size_t i = 0; i < job.inputs.size(); ++i)
        if (arguments_->inputs[i].shape() != job.inputs[i]) return false;
      return true;
    };
    if (!arguments_ || arguments_->output_shapes != job.outputs || !same_inputs())
      arguments_ = measure::make_kernel_arguments(job.inputs, job.outputs);
    return *arguments_;
  }

  int index_;
  std::vector<int> cores_;
  std::string device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  std::optional<Job> job_;
  std::string object_path_;
  std::optional<measure::KernelArguments> arguments_;
  std::thread thread_;  // last: starts once the members above exist
};

struct SlotState {
  enum class Phase { Free, Reserved, Session, Running } phase = Phase::Free;
  std::string token;
  std::string client;  // routing id of the tuner in session
  std::string job;     // the running job
  int measured = 0;    // jobs of this session
  Clock::time_point last_heard;  // of the tuner (or of the grant)
  Clock::time_point last_keepalive;
};

std::vector<std::vector<int>> split_cores(const std::vector<int>& cores, int slots) {
  std::vector<std::vector<int>> per_slot(static_cast<size_t>(slots));
  if (cores.empty()) return per_slot;
  // A CPU this process may not run on would fail every measurement later.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    for (int core : cores)
      if (core < 0 || core >= CPU_SETSIZE || !CPU_ISSET(core, &allowed))
        throw Error(fmt::format("--cores {}: CPU {} is not one this machine lets the server run on ({} are)",
                                fmt::join(cores, ","), core, CPU_COUNT(&allowed)));
  if (static_cast<int>(cores.size()) < slots)
    throw Error(fmt::format("--cores {}: fewer cores than the {} slots", fmt::join(cores, ","), slots));
  const size_t each = cores.size() / static_cast<size_t>(slots);
  for (size_t i = 0; i < static_cast<size_t>(slots) * each; ++i) per_slot[i / each].push_back(cores[i]);
  return per_slot;
}

}  // namespace

struct Server::State {
  zmq::context_t context;
  std::unique_ptr<Authenticator> authenticator;
  std::unique_ptr<HandshakeMonitor> monitor;
  zmq::socket_t data{context, zmq::socket_type::router};
  zmq::socket_t results{context, zmq::socket_type::pull};
  std::unique_ptr<zmq::socket_t> tracker;
  std::unique_ptr<ConnectHandshakeMonitor> tracker_handshakes;
  std::vector<std::unique_ptr<SlotWorker>> workers;
  std::vector<SlotState> slots;
  std::string id = random_token();
  std::string address, work_dir;
  bool owns_work_dir = false;
  KeyPair keys;
  Clock::time_point last_heartbeat_sent, last_tracker_reply, last_register_sent;
  bool registered = false;
  int uploads = 0;

  void connect_tracker(const ServerOptions& o) {
    tracker_handshakes.reset();
    tracker = connect_to_tracker(context, o.tracker, keys);
    tracker_handshakes = std::make_unique<ConnectHandshakeMonitor>(context, *tracker);
  }
  // A tracker that refuses our key will refuse it for ever: stop and say so,
  // rather than "serve" a fleet that never sends a job.
  void require_tracker_accepts_key(const ServerOptions& o) {
    tracker_handshakes->handle();
    if (tracker_handshakes->refusals_in_a_row() < 3) return;
    throw Error(fmt::format("rpc server: the tracker at {} refuses this server: {} (key file {}, public key {}). "
                            "Give the tracker and its servers the same key file, or list this public key in "
                            "the tracker's --authorized-keys",
                            o.tracker, tracker_handshakes->last_refusal(),
                            o.key_file.empty() ? default_key_file() : o.key_file, keys.public_key));
  }
  void to_tracker(nlohmann::json header) { send(*tracker, Message{std::move(header), {}}); }
  void register_with_tracker(const ServerOptions& o) {
    nlohmann::json busy = nlohmann::json::array();
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i].phase != SlotState::Phase::Free) busy.push_back(i);
    to_tracker({{"type", "register"}, {"server", id}, {"key", o.key}, {"address", address},
                {"public_key", keys.public_key}, {"slots", slots.size()}, {"busy", busy}});
    last_register_sent = Clock::now();
  }
  void free_slot(size_t index, const std::string& why) {
    SlotState& s = slots[index];
    if (s.phase == SlotState::Phase::Free) return;
    if (s.phase == SlotState::Phase::Running) return;  // the worker still owns it; freed when its result comes
    log_line(kWho, fmt::format("slot {}: session ended after {} measurement{} ({})", index, s.measured,
                               s.measured == 1 ? "" : "s", why));
    s = SlotState{};
    to_tracker({{"type", "free"}, {"server", id}, {"slot", index}});
  }
  void on_tracker_message(const Message& m, const ServerOptions& o);
  void on_session_message(const std::string& peer, const Message& m, const ServerOptions& o);
  void on_done(const Message& m);
  void timers(const ServerOptions& o);
};

Server::Server(ServerOptions options) : options_(std::move(options)), state_(std::make_unique<State>()) {}

Server::~Server() {
  if (state_ && state_->owns_work_dir) {
    std::error_code ec;
    std::filesystem::remove_all(state_->work_dir, ec);
  }
}

void Server::serve(const std::atomic<bool>& stop) {
  State& s = *state_;
  const ServerOptions& o = options_;
  if (o.key.empty()) throw Error("rpc server: --key must name the device key");
  if (o.slots < 1 || o.slots > 1024) throw Error(fmt::format("rpc server: --slots {}: must be 1 to 1024", o.slots));
  check_tracker_address(o.tracker);
  const auto cores = split_cores(o.cores, o.slots);
  s.keys = read_key_file(o.key_file.empty() ? default_key_file() : o.key_file);
  std::set<std::string> allowed{s.keys.public_key};
  if (!o.authorized_keys.empty()) allowed.merge(read_authorized_keys(o.authorized_keys));
  s.authenticator = std::make_unique<Authenticator>(s.context, allowed, kWho);

  if (o.work_dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-rpc-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw Error("cannot create a work directory " + pattern + ": " + std::strerror(errno));
    s.work_dir = pattern;
    s.owns_work_dir = true;
  } else {
    s.work_dir = o.work_dir;
    std::filesystem::create_directories(s.work_dir);
  }

  s.data.set(zmq::sockopt::linger, 0);
  s.data.set(zmq::sockopt::maxmsgsize, int64_t(2 * o.max_upload_bytes + kMaxHeaderBytes));
  s.data.set(zmq::sockopt::router_mandatory, 1);
  make_curve_server(s.data, s.keys);
  s.monitor = std::make_unique<HandshakeMonitor>(s.context, s.data, kWho);
  try {
    s.data.bind(fmt::format("tcp://{}:{}", o.host, o.port == 0 ? "*" : std::to_string(o.port)));
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("rpc server: cannot bind to {}:{}: {}", o.host, o.port, e.what()));
  }
  const std::string bound = s.data.get(zmq::sockopt::last_endpoint);
  s.address = fmt::format("tcp://{}:{}", o.host, bound.substr(bound.rfind(':') + 1));
  s.results.set(zmq::sockopt::linger, 0);
  s.results.bind(kResults);
  s.slots.resize(static_cast<size_t>(o.slots));
  if (o.device != "cpu" && o.device != kVtaSimulator)
    throw Error("rpc server: --device " + o.device + ": cpu or " + kVtaSimulator);
  for (int i = 0; i < o.slots; ++i)
    s.workers.push_back(std::make_unique<SlotWorker>(s.context, i, cores[i], o.device));
  s.connect_tracker(o);
  s.register_with_tracker(o);
  s.last_tracker_reply = Clock::now();
  log_line(kWho, fmt::format("key {}, {} slot{}, serving at {}, registering with tracker {}", o.key, o.slots,
                             o.slots == 1 ? "" : "s", s.address, o.tracker));

  while (!stop) {
    zmq::pollitem_t items[] = {{s.data.handle(), 0, ZMQ_POLLIN, 0},
                               {s.tracker->handle(), 0, ZMQ_POLLIN, 0},
                               {s.results.handle(), 0, ZMQ_POLLIN, 0},
                               {s.authenticator->socket().handle(), 0, ZMQ_POLLIN, 0},
                               {s.monitor->socket().handle(), 0, ZMQ_POLLIN, 0}};
    poll_sockets(items, 5, std::chrono::milliseconds(100));
    if (items[3].revents & ZMQ_POLLIN) s.authenticator->handle();
    if (items[4].revents & ZMQ_POLLIN) s.monitor->handle();
    s.require_tracker_accepts_key(o);
    for (Received r; !(r = receive(s.results, false, 0)).empty();)
      if (r.message) s.on_done(*r.message);
    for (Received r; !(r = receive(*s.tracker, false, 0)).empty();) {
      if (!r.message) {
        log_line(kWho, "dropped a malformed message from the tracker: " + r.error);
        continue;
      }
      s.last_tracker_reply = Clock::now();
      try {
        s.on_tracker_message(*r.message, o);
      } catch (const std::exception& e) {
        log_line(kWho, std::string("dropped a message from the tracker: ") + e.what());
      }
    }
    for (int n = 0; n < 100; ++n) {
      Received r = receive(s.data, true, o.max_upload_bytes);
      if (r.empty()) break;
      if (!r.message) {
        log_line(kWho, "dropped a malformed message: " + r.error);
        continue;
      }
      try {
        s.on_session_message(r.peer, *r.message, o);
      } catch (const std::exception& e) {
        log_line(kWho, fmt::format("dropped a '{}' message: {}", r.message->header.value("type", "?"), e.what()));
      }
    }
    s.timers(o);
  }
  s.to_tracker({{"type", "bye"}, {"server", s.id}});
  s.workers.clear();  // joins: a running measurement's child is killed with its thread
  log_line(kWho, "stopped");
}

void Server::State::on_tracker_message(const Message& m, const ServerOptions& o) {
  const std::string type = m.type();
  if (type == "registered") {
    if (!registered) log_line(kWho, "registered with the tracker");
    registered = true;
  } else if (type == "unknown") {
    if (registered) log_line(kWho, "the tracker does not know this server (restarted?): registering again");
    registered = false;
    register_with_tracker(o);
  } else if (type == "grant") {
    const auto index = static_cast<size_t>(integer_field(m.header, "slot", 0, int64_t(slots.size()) - 1));
    const std::string token = string_field(m.header, "token", 64);
    SlotState& s = slots[index];
    if (s.phase != SlotState::Phase::Free) {  // the tracker's view is stale: tell it again
      register_with_tracker(o);
      return;
    }
    s.phase = SlotState::Phase::Reserved;
    s.token = token;
    s.last_heard = Clock::now();
    to_tracker({{"type", "reserved"}, {"server", id}, {"slot", index}, {"token", token}});
  } else if (type == "revoke") {
    const auto index = static_cast<size_t>(integer_field(m.header, "slot", 0, int64_t(slots.size()) - 1));
    const SlotState& s = slots[index];
    if (s.phase == SlotState::Phase::Reserved && s.token == string_field(m.header, "token", 64))
      free_slot(index, "its tuner was gone before the grant reached it");
  } else if (type != "ack") {
    throw Error("unknown message type '" + type + "'");
  }
}

void Server::State::on_session_message(const std::string& peer, const Message& m, const ServerOptions& o) {
  const std::string type = m.type();
  const std::string token = string_field(m.header, "token", 64);
  size_t index = slots.size();
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].phase != SlotState::Phase::Free && slots[i].token == token) index = i;
  const std::string job_id = m.header.value("job", std::string());
  auto refuse = [&](const std::string& reason) {
    send(data, Message{{{"type", "refused"}, {"job", job_id.substr(0, 64)}, {"reason", reason}}, {}}, peer);
    log_line(kWho, "refused a '" + type + "': " + reason);
  };
  if (index == slots.size()) return refuse("no session holds this token (expired, or never granted)");
  SlotState& s = slots[index];
  if (s.phase != SlotState::Phase::Reserved && s.client != peer) return refuse("the session belongs to another tuner");
  s.client = peer;
  s.last_heard = Clock::now();
  if (type == "close") {
    if (s.phase == SlotState::Phase::Running) return;  // freed when the running job ends
    return free_slot(index, "closed by the tuner");
  }
  if (type != "run") return refuse("unknown message type");
  if (s.phase == SlotState::Phase::Running) return refuse("the slot is measuring another job");
  Job job;
  try {
    job = decode_job(m, JobLimits{o.max_upload_bytes, o.max_run_seconds});
  } catch (const std::exception& e) {
    if (s.phase == SlotState::Phase::Reserved) s.phase = SlotState::Phase::Session;
    return refuse(e.what());
  }
  const std::string path = fmt::format("{}/slot{}-{}-{}", work_dir, index, uploads++, job.name);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(job.object.data(), static_cast<std::streamsize>(job.object.size()));
    if (!out) return refuse("cannot store the upload: " + std::string(std::strerror(errno)));
  }
  s.phase = SlotState::Phase::Running;
  s.job = job.id;
  s.last_keepalive = Clock::now();
  send(data, Message{{{"type", "accepted"}, {"job", job.id}}, {}}, peer);
  workers[index]->start(std::move(job), path);
}

void Server::State::on_done(const Message& m) {
  const auto index = static_cast<size_t>(m.header.at("slot").get<int64_t>());
  SlotState& s = slots.at(index);
  send(data, Message{{{"type", "result"}, {"job", m.header.at("job")}, {"result", m.header.at("result")}}, {}}, s.client);
  s.phase = SlotState::Phase::Session;
  s.job.clear();
  ++s.measured;
  s.last_heard = Clock::now();
}

void Server::State::timers(const ServerOptions& o) {
  const auto now = Clock::now();
  if (now - last_heartbeat_sent > seconds(o.heartbeat_interval)) {
    to_tracker({{"type", "heartbeat"}, {"server", id}});
    last_heartbeat_sent = now;
  }
  // A tracker silent for three intervals is gone (restarting, or the network):
  // reconnect and register again, until it answers.
  if (now - last_tracker_reply > seconds(3 * o.heartbeat_interval) &&
      now - last_register_sent > seconds(3 * o.heartbeat_interval)) {
    if (registered) log_line(kWho, "the tracker is silent: reconnecting");
    registered = false;
    connect_tracker(o);
    register_with_tracker(o);
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    SlotState& s = slots[i];
    if (s.phase == SlotState::Phase::Running) {
      if (now - s.last_keepalive > std::chrono::seconds(1)) {
        send(data, Message{{{"type", "running"}, {"job", s.job}}, {}}, s.client);
        s.last_keepalive = now;
      }
    } else if (s.phase != SlotState::Phase::Free && now - s.last_heard > seconds(o.session_timeout)) {
      free_slot(i, fmt::format("the tuner was silent for {:g} s", o.session_timeout));
    }
  }
}

}  // namespace tessera::rpc
