#include "rpc/message.h"

#include <fmt/format.h>

#include "support/bounded_json.h"
#include "tessera/error.h"

namespace tessera::rpc {

bool send(zmq::socket_t& socket, const Message& message, const std::string& peer) {
  const std::string header = message.header.dump();
  const size_t frames = (peer.empty() ? 0 : 1) + 1 + message.blobs.size();
  size_t sent = 0;
  auto flags = [&] { return ++sent < frames ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                            : zmq::send_flags::dontwait; };
  try {
    if (!peer.empty() && !socket.send(zmq::buffer(peer), flags())) return false;
    if (!socket.send(zmq::buffer(header), flags())) return false;
    for (const auto& blob : message.blobs)
      if (!socket.send(zmq::buffer(blob), flags())) return false;
  } catch (const zmq::error_t&) {  // EHOSTUNREACH from a ROUTER with ZMQ_ROUTER_MANDATORY
    return false;
  }
  return true;
}

Received receive(zmq::socket_t& socket, bool router, size_t max_blob_bytes) {
  Received r;
  std::vector<zmq::message_t> frames;
  const size_t most = (router ? 1 : 0) + 1 + kMaxBlobs;
  for (;;) {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) {
      if (frames.empty()) return r;  // nothing to read
      break;                         // cannot happen mid-message: ZeroMQ delivers whole messages
    }
    const bool more = frame.more();
    if (frames.size() < most) frames.push_back(std::move(frame));
    else r.error = "too many frames";  // read on to the message's end all the same
    if (!more) break;
  }
  size_t next = 0;
  if (router) {
    if (frames.empty()) return r;
    r.peer = frames[next++].to_string();
  }
  if (!r.error.empty()) return r;
  if (next >= frames.size()) {
    r.error = "no header frame";
    return r;
  }
  const zmq::message_t& header = frames[next++];
  if (header.size() > kMaxHeaderBytes) {
    r.error = fmt::format("a header of {} bytes (the limit is {})", header.size(), kMaxHeaderBytes);
    return r;
  }
  Message m;
  try {
    m.header = support::parse_bounded_json(header.to_string(), {.max_depth = 8, .max_elements = 4096,
                                                                .max_bytes = kMaxHeaderBytes});
    if (!m.header.is_object()) throw Error("the header is not a JSON object");
    string_field(m.header, "type", 32);
  } catch (const std::exception& e) {
    r.error = std::string("bad header: ") + e.what();
    return r;
  }
  for (; next < frames.size(); ++next) {
    if (frames[next].size() > max_blob_bytes) {
      r.error = fmt::format("a blob of {} bytes (the limit is {})", frames[next].size(), max_blob_bytes);
      return r;
    }
    m.blobs.push_back(frames[next].to_string());
  }
  r.message = std::move(m);
  return r;
}

void poll_sockets(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout) {
  try {
    zmq::poll(items, count, timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    for (size_t i = 0; i < count; ++i) items[i].revents = 0;
  }
}

std::string string_field(const nlohmann::json& header, const char* name, size_t max_length) {
  auto it = header.find(name);
  if (it == header.end() || !it->is_string()) throw Error(fmt::format("field '{}' must be a string", name));
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max_length) throw Error(fmt::format("field '{}' is longer than {} bytes", name, max_length));
  return s;
}

int64_t integer_field(const nlohmann::json& header, const char* name, int64_t lo, int64_t hi) {
  auto it = header.find(name);
  if (it == header.end() || !it->is_number_integer())
    throw Error(fmt::format("field '{}' must be an integer", name));
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX) ? hi + 1 : it->get<int64_t>();
  if (v < lo || v > hi) throw Error(fmt::format("field '{}' = {} is outside [{}, {}]", name, v, lo, hi));
  return v;
}

}  // namespace tessera::rpc
