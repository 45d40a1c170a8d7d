#pragma once
// Bytes through a file descriptor (a pipe to a parent, an in-memory file):
// written whole, and framed so that a reader of the stream can tell where one
// message ends.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::support {

// Writes all of `bytes` to fd, retrying short writes and interrupted calls;
// false on an error (the reader gone, the disk full).
bool write_all(int fd, std::string_view bytes);

// A frame: the message's size as 8 bytes, then the message (any bytes).
inline std::string framed(std::string_view message) {
  const uint64_t size = message.size();
  std::string out(reinterpret_cast<const char*>(&size), sizeof size);
  out.append(message);
  return out;
}

// The whole frame at `at` of `stream`, if it has all arrived: its message,
// and `at` moved past it; nothing (and `at` unmoved) otherwise.
inline std::optional<std::string> next_frame(const std::string& stream, size_t& at) {
  uint64_t size = 0;
  if (stream.size() < at + sizeof size) return std::nullopt;
  std::memcpy(&size, stream.data() + at, sizeof size);
  if (stream.size() - at - sizeof size < size) return std::nullopt;
  std::string message = stream.substr(at + sizeof size, size);
  at += sizeof size + size;
  return message;
}

}  // namespace tessera::support
