#include "rpc/tracker.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <zmq.hpp>

#include "rpc/log.h"
#include "rpc/message.h"
#include "rpc/random_token.h"
#include "rpc/security.h"
#include "tessera/error.h"

namespace tessera::rpc {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kWho = "tracker";
constexpr int kMaxSlots = 1024;
constexpr size_t kMaxQueued = 100000;       // requests waiting, over all tuners
constexpr size_t kRememberedGrants = 10000;  // (client, request) pairs already granted

struct Request {
  std::string client, id, key, peer;  // peer: the tuner's routing id
  int64_t priority = 0;
  uint64_t order = 0;  // arrival: first in, first out within a priority
  Clock::time_point refreshed;  // the last time the tuner sent it: a dead tuner's requests expire
};

struct Slot {
  enum class State { Free, Offered, Busy } state = State::Free;
  std::string token;
  Request request;  // the request an Offered slot will answer
  Clock::time_point offered_at;
};

struct ServerEntry {
  std::string id, key, address, public_key, peer;
  std::vector<Slot> slots;
  Clock::time_point last_seen;
  int free_slots() const {
    return static_cast<int>(std::count_if(slots.begin(), slots.end(), [](const Slot& s) { return s.state == Slot::State::Free; }));
  }
};

}  // namespace

struct Tracker::State {
  zmq::context_t context;
  std::unique_ptr<Authenticator> authenticator;
  zmq::socket_t router{context, zmq::socket_type::router};
  std::unique_ptr<HandshakeMonitor> monitor;
  std::atomic<int> port{0};

  std::map<std::string, ServerEntry> servers;  // by server id
  std::vector<Request> queue;
  uint64_t next_order = 0;
  std::set<std::pair<std::string, std::string>> granted;  // (client, request)
  std::deque<std::pair<std::string, std::string>> granted_order;
  double heartbeat_timeout = 3, request_timeout = 10;

  // False when the peer is gone (ZMQ_ROUTER_MANDATORY).
  bool delivered(const std::string& peer, nlohmann::json header) {
    return send(router, Message{std::move(header), {}}, peer);
  }
  void reply(const std::string& peer, nlohmann::json header) { delivered(peer, std::move(header)); }
  int64_t devices_of(const std::string& key) const;
  void handle(const std::string& peer, const Message& m);
  void on_register(const std::string& peer, const nlohmann::json& h);
  void on_request(const std::string& peer, const nlohmann::json& h);
  void on_summary(const std::string& peer);
  void remember_grant(const Request& r);
  void requeue(Request r) { queue.push_back(std::move(r)); }
  void drop_server(std::map<std::string, ServerEntry>::iterator it, const std::string& why);
  void match();
  void expire(Clock::time_point now);
};

Tracker::Tracker(TrackerOptions options) : options_(std::move(options)), state_(std::make_unique<State>()) {}
Tracker::~Tracker() = default;

int Tracker::port() const { return state_->port.load(); }

void Tracker::serve(const std::atomic<bool>& stop) {
  State& s = *state_;
  s.heartbeat_timeout = options_.heartbeat_timeout;
  s.request_timeout = options_.request_timeout;
  const KeyPair keys = read_key_file(options_.key_file.empty() ? default_key_file() : options_.key_file);
  std::set<std::string> allowed{keys.public_key};
  if (!options_.authorized_keys.empty()) allowed.merge(read_authorized_keys(options_.authorized_keys));
  s.authenticator = std::make_unique<Authenticator>(s.context, allowed, kWho);

  s.router.set(zmq::sockopt::linger, 0);
  s.router.set(zmq::sockopt::maxmsgsize, int64_t(kMaxHeaderBytes + 1024));
  s.router.set(zmq::sockopt::router_mandatory, 1);  // a reply to a vanished peer fails instead of blocking
  make_curve_server(s.router, keys);
  s.monitor = std::make_unique<HandshakeMonitor>(s.context, s.router, kWho);
  const std::string endpoint = fmt::format("tcp://{}:{}", options_.host, options_.port == 0 ? "*" : std::to_string(options_.port));
  try {
    s.router.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("tracker: cannot bind to {}:{}: {}", options_.host, options_.port, e.what()));
  }
  const std::string bound = s.router.get(zmq::sockopt::last_endpoint);
  s.port = std::stoi(bound.substr(bound.rfind(':') + 1));
  log_line(kWho, fmt::format("bind to {}:{}", options_.host, s.port.load()));

  while (!stop) {
    zmq::pollitem_t items[] = {{s.router.handle(), 0, ZMQ_POLLIN, 0},
                               {s.authenticator->socket().handle(), 0, ZMQ_POLLIN, 0},
                               {s.monitor->socket().handle(), 0, ZMQ_POLLIN, 0}};
    poll_sockets(items, 3, std::chrono::milliseconds(100));
    if (items[1].revents & ZMQ_POLLIN) s.authenticator->handle();
    if (items[2].revents & ZMQ_POLLIN) s.monitor->handle();
    for (int n = 0; n < 1000; ++n) {  // drain, but let the timers run now and then
      Received r = receive(s.router, /*router=*/true, 0);
      if (r.empty()) break;
      if (!r.message) {
        log_line(kWho, "dropped a malformed message: " + r.error);
        continue;
      }
      try {
        s.handle(r.peer, *r.message);
      } catch (const std::exception& e) {
        log_line(kWho, fmt::format("dropped a '{}' message: {}", r.message->header.value("type", "?"), e.what()));
      }
    }
    s.expire(Clock::now());
    s.match();
  }
  log_line(kWho, "stopped");
}

void Tracker::State::handle(const std::string& peer, const Message& m) {
  const std::string type = m.type();
  const auto& h = m.header;
  if (type == "register") return on_register(peer, h);
  if (type == "request") return on_request(peer, h);
  if (type == "summary") return on_summary(peer);
  if (type == "cancel") {
    const std::string client = string_field(h, "client"), id = string_field(h, "request");
    std::erase_if(queue, [&](const Request& r) { return r.client == client && r.id == id; });
    return;
  }
  const std::string server = string_field(h, "server");
  auto it = servers.find(server);
  if (type == "heartbeat") {
    if (it == servers.end()) return reply(peer, {{"type", "unknown"}});
    it->second.last_seen = Clock::now();
    it->second.peer = peer;
    return reply(peer, {{"type", "ack"}});
  }
  if (it == servers.end()) return reply(peer, {{"type", "unknown"}});
  ServerEntry& e = it->second;
  e.last_seen = Clock::now();
  if (type == "bye") return drop_server(it, "stopped");
  const int64_t index = integer_field(h, "slot", 0, static_cast<int64_t>(e.slots.size()) - 1);
  Slot& slot = e.slots[static_cast<size_t>(index)];
  if (type == "reserved") {
    if (slot.state != Slot::State::Offered || slot.token != string_field(h, "token")) return;
    remember_grant(slot.request);
    const bool tuner_alive =
        delivered(slot.request.peer, {{"type", "granted"}, {"request", slot.request.id}, {"server", e.id},
                                  {"address", e.address}, {"public_key", e.public_key}, {"slot", index},
                                  {"token", slot.token}});
    // The tuner is gone: the server need not hold the slot for its session
    // timeout. It stays busy here until the server's "free" says it is.
    if (!tuner_alive) reply(e.peer, {{"type", "revoke"}, {"slot", index}, {"token", slot.token}});
    slot.state = Slot::State::Busy;
    return;
  }
  if (type == "free") {
    if (slot.state == Slot::State::Offered) requeue(slot.request);  // a grant crossed the free: serve it again
    slot = Slot{};
    return;
  }
  throw Error("unknown message type");
}

void Tracker::State::on_register(const std::string& peer, const nlohmann::json& h) {
  ServerEntry e;
  e.id = string_field(h, "server", 64);
  e.key = string_field(h, "key", 64);
  e.address = string_field(h, "address", 256);
  e.public_key = string_field(h, "public_key", 40);
  e.peer = peer;
  e.slots.resize(static_cast<size_t>(integer_field(h, "slots", 1, kMaxSlots)));
  if (e.key.empty()) throw Error("an empty key");
  if (auto busy = h.find("busy"); busy != h.end()) {
    if (!busy->is_array()) throw Error("field 'busy' must be an array");
    for (const auto& b : *busy)
      if (b.is_number_integer() && b.get<int64_t>() >= 0 && b.get<int64_t>() < int64_t(e.slots.size()))
        e.slots[b.get<size_t>()].state = Slot::State::Busy;
  }
  e.last_seen = Clock::now();
  if (auto old = servers.find(e.id); old != servers.end()) drop_server(old, "registered again");
  log_line(kWho, fmt::format("server {} registered: key {}, {} slot{}, at {}", e.id.substr(0, 8), e.key,
                             e.slots.size(), e.slots.size() == 1 ? "" : "s", e.address));
  servers.emplace(e.id, std::move(e));
  reply(peer, {{"type", "registered"}});
}

void Tracker::State::on_request(const std::string& peer, const nlohmann::json& h) {
  Request r;
  r.client = string_field(h, "client", 64);
  r.id = string_field(h, "request", 64);
  r.key = string_field(h, "key", 64);
  r.priority = integer_field(h, "priority", -1000000, 1000000);
  r.peer = peer;
  r.refreshed = Clock::now();
  // Every request is answered with the number of live devices of its key,
  // so a tuner can tell "all busy" (wait) from "none left" (give up).
  reply(peer, {{"type", "queued"}, {"request", r.id}, {"key", r.key}, {"devices", devices_of(r.key)}});
  if (granted.count({r.client, r.id})) return;  // a re-send of a request already served
  for (auto& q : queue)
    if (q.client == r.client && q.id == r.id) {
      q.peer = peer;  // the tuner may have reconnected
      q.refreshed = r.refreshed;
      return;
    }
  for (auto& [id, e] : servers)
    for (auto& slot : e.slots)
      if (slot.state == Slot::State::Offered && slot.request.client == r.client && slot.request.id == r.id) return;
  if (queue.size() >= kMaxQueued) throw Error("the request queue is full");
  r.order = next_order++;
  queue.push_back(std::move(r));
}

void Tracker::State::on_summary(const std::string& peer) {
  std::map<std::string, std::array<int64_t, 3>> keys;  // total, free, pending
  nlohmann::json server_list = nlohmann::json::array();
  for (const auto& [id, e] : servers) {
    auto& k = keys[e.key];
    k[0] += static_cast<int64_t>(e.slots.size());
    k[1] += e.free_slots();
    server_list.push_back({{"server", id}, {"key", e.key}, {"address", e.address},
                           {"slots", e.slots.size()}, {"free", e.free_slots()}});
  }
  for (const auto& r : queue) keys[r.key][2] += 1;
  nlohmann::json key_list = nlohmann::json::array();
  for (const auto& [key, k] : keys) key_list.push_back({{"key", key}, {"total", k[0]}, {"free", k[1]}, {"pending", k[2]}});
  reply(peer, {{"type", "summary"}, {"keys", key_list}, {"servers", server_list}});
}

int64_t Tracker::State::devices_of(const std::string& key) const {
  int64_t n = 0;
  for (const auto& [id, e] : servers)
    if (e.key == key) n += static_cast<int64_t>(e.slots.size());
  return n;
}

void Tracker::State::remember_grant(const Request& r) {
  if (granted.insert({r.client, r.id}).second) granted_order.emplace_back(r.client, r.id);
  while (granted_order.size() > kRememberedGrants) {
    granted.erase(granted_order.front());
    granted_order.pop_front();
  }
}

void Tracker::State::drop_server(std::map<std::string, ServerEntry>::iterator it, const std::string& why) {
  ServerEntry& e = it->second;
  for (auto& slot : e.slots)
    if (slot.state == Slot::State::Offered) requeue(slot.request);
  log_line(kWho, fmt::format("server {} (key {}) left the pool: {}", e.id.substr(0, 8), e.key, why));
  servers.erase(it);
}

void Tracker::State::expire(Clock::time_point now) {
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(heartbeat_timeout));
  // A tuner re-sends its requests every few seconds; one that stopped (killed,
  // say) would otherwise have each request granted in turn and held.
  const auto request_expiry = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(request_timeout));
  std::erase_if(queue, [&](const Request& r) { return now - r.refreshed > request_expiry; });
  for (auto it = servers.begin(); it != servers.end();) {
    auto next = std::next(it);
    if (now - it->second.last_seen > timeout) {
      drop_server(it, fmt::format("no heartbeat for {:g} s", heartbeat_timeout));
    } else {
      for (auto& slot : it->second.slots)
        if (slot.state == Slot::State::Offered && now - slot.offered_at > timeout) {
          requeue(slot.request);
          slot = Slot{};
        }
    }
    it = next;
  }
}

void Tracker::State::match() {
  if (queue.empty()) return;
  std::stable_sort(queue.begin(), queue.end(), [](const Request& a, const Request& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.order < b.order;
  });
  std::vector<Request> waiting;
  for (auto& r : queue) {
    ServerEntry* best = nullptr;  // the server of the key with the most free slots: spreads the load
    for (auto& [id, e] : servers)
      if (e.key == r.key && e.free_slots() > 0 && (!best || e.free_slots() > best->free_slots())) best = &e;
    if (!best) {
      waiting.push_back(std::move(r));
      continue;
    }
    size_t index = 0;
    while (best->slots[index].state != Slot::State::Free) ++index;
    Slot& slot = best->slots[index];
    slot.state = Slot::State::Offered;
    slot.token = random_token();
    slot.offered_at = Clock::now();
    slot.request = std::move(r);
    reply(best->peer, {{"type", "grant"}, {"slot", index}, {"token", slot.token}});
  }
  queue = std::move(waiting);
}

}  // namespace tessera::rpc
