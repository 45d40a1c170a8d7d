#pragma once
// The one message shape of every RPC socket: a JSON header (an object with a
// string "type") and up to kMaxBlobs binary blobs (a kernel's object file, an
// expected output). Every frame received is size-checked and the header is
// parsed within bounds; a malformed message is dropped with a log line by the
// caller, never a crash.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

namespace tessera::rpc {

inline constexpr size_t kMaxHeaderBytes = 64 * 1024;
inline constexpr size_t kMaxBlobs = 2;

struct Message {
  nlohmann::json header;           // an object; header["type"] is a string
  std::vector<std::string> blobs;  // at most kMaxBlobs
  std::string type() const { return header.at("type").get<std::string>(); }
};

// What a receive saw: a message, a malformed one (`error` says what is wrong),
// or nothing (the socket had nothing to read).
struct Received {
  std::string peer;  // the routing id (ROUTER sockets), else empty
  std::optional<Message> message;
  std::string error;
  bool empty() const { return !message && error.empty(); }
};

// Sends `message` (to `peer` first when the socket is a ROUTER). Never blocks:
// false when the message cannot be queued now (the peer is gone or its queue is full).
bool send(zmq::socket_t& socket, const Message& message, const std::string& peer = "");

// Reads one whole multipart message without blocking. `router` says the first
// frame is a routing id. Every frame of a malformed message is read, so the
// next receive starts at a message boundary.
Received receive(zmq::socket_t& socket, bool router, size_t max_blob_bytes);

// zmq::poll that treats a signal (EINTR: Ctrl-C on the tracker) as a poll
// that found nothing, so the caller's loop can look at its stop flag.
void poll_sockets(zmq::pollitem_t* items, size_t count, std::chrono::milliseconds timeout);

// A header field of the right type, or tessera::Error naming the field.
std::string string_field(const nlohmann::json& header, const char* name, size_t max_length = 256);
int64_t integer_field(const nlohmann::json& header, const char* name, int64_t lo, int64_t hi);

}  // namespace tessera::rpc
