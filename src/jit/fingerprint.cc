#include "jit/fingerprint.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "graph/printer.h"

namespace tessera::jit {

Fingerprint& Fingerprint::add(const void* data, size_t bytes) {
  // FNV-1a over 8-byte words (a network's weights are tens of MB: a byte
  // at a time would cost a second), then the tail a byte at a time.
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    a_ = (a_ ^ word) * 0x100000001b3ULL;
    b_ = (b_ ^ word) * 0x100000001b3ULL;
    b_ ^= b_ >> 29;  // keeps the lanes apart
  }
  for (; i < bytes; ++i) {
    a_ = (a_ ^ p[i]) * 0x100000001b3ULL;
    b_ = (b_ ^ p[i]) * 0x100000001b3ULL;
    b_ ^= b_ >> 29;
  }
  return *this;
}

Fingerprint& Fingerprint::add(const std::string& text) {
  const uint64_t size = text.size();
  add(&size, sizeof size);
  return add(text.data(), text.size());
}

std::string Fingerprint::hex() const { return fmt::format("{:016x}{:016x}", a_, b_); }

std::string fingerprint_graph(const graph::Graph& graph) {
  Fingerprint f;
  f.add(graph::print_graph(graph));
  for (const auto& node : graph.nodes()) {
    f.add(node.name).add(node.type.to_string());
    if (node.value) f.add(node.value->data(), static_cast<size_t>(node.value->size()) * sizeof(float));
  }
  return f.hex();
}

std::string fingerprint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Fingerprint f;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) f.add(buffer, static_cast<size_t>(in.gcount()));
  return f.hex();
}

}  // namespace tessera::jit
