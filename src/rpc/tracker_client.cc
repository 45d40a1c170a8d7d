#include "rpc/tracker_client.h"

#include <netdb.h>

#include <charconv>
#include <chrono>

#include <fmt/format.h>

#include "tessera/error.h"

namespace tessera::rpc {

void check_tracker_address(const std::string& tracker) {
  const size_t colon = tracker.rfind(':');
  if (colon == std::string::npos || colon == 0) throw Error("tracker '" + tracker + "': must be HOST:PORT");
  const std::string port = tracker.substr(colon + 1);
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535)
    throw Error("tracker '" + tracker + "': the port must be a number from 1 to 65535");
  std::string host = tracker.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [IPv6]
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0) throw Error(fmt::format("tracker '{}': cannot resolve host '{}': {}", tracker, host, gai_strerror(status)));
  freeaddrinfo(found);
}

std::unique_ptr<zmq::socket_t> connect_to_tracker(zmq::context_t& context, const std::string& tracker,
                                                  const KeyPair& keys) {
  auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
  socket->set(zmq::sockopt::linger, 0);
  socket->set(zmq::sockopt::maxmsgsize, int64_t(kMaxHeaderBytes + 1024));
  make_curve_client(*socket, keys, keys.public_key);
  try {
    socket->connect("tcp://" + tracker);
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("tracker '{}': {}", tracker, e.what()));
  }
  return socket;
}

std::vector<KeyStatus> query_tracker(const std::string& tracker, const KeyPair& keys, double timeout) {
  zmq::context_t context;
  check_tracker_address(tracker);
  auto socket = connect_to_tracker(context, tracker, keys);
  send(*socket, Message{{{"type", "summary"}}, {}});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item{socket->handle(), 0, ZMQ_POLLIN, 0};
    poll_sockets(&item, 1, std::chrono::milliseconds(100));
    Received r = receive(*socket, false, 0);
    if (!r.message || r.message->type() != "summary") continue;
    std::vector<KeyStatus> keys_status;
    try {
      for (const auto& k : r.message->header.at("keys"))
        keys_status.push_back({k.at("key").get<std::string>(), k.at("total").get<int64_t>(),
                               k.at("free").get<int64_t>(), k.at("pending").get<int64_t>()});
    } catch (const std::exception& e) {
      throw Error(fmt::format("tracker {}: a malformed summary: {}", tracker, e.what()));
    }
    return keys_status;
  }
  throw Error(fmt::format("tracker {}: no answer within {:g} s (is it running, and does it hold the same key file?)",
                          tracker, timeout));
}

std::string format_queue_status(const std::vector<KeyStatus>& keys) {
  const std::string rule(34, '-');
  std::string text = "Queue Status\n" + rule + "\n" + fmt::format("{:<12} {:<6} {:<5} {}\n", "key", "total", "free", "pending") +
                     rule + "\n";
  for (const auto& k : keys) text += fmt::format("{:<12} {:<6} {:<5} {}\n", k.key, k.total, k.free, k.pending);
  return text + rule + "\n";
}

}  // namespace tessera::rpc
