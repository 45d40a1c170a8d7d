#pragma once
// Fingerprints that key the compiled-artifact cache: a network (its printed
// structure, shapes and every weight's bytes), a file's contents, and the
// combination of everything a build depends on.
#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace tessera::jit {

// Incremental 128-bit FNV-1a over 8-byte words (two 64-bit lanes of
// different offsets): not cryptographic, but collisions between the few
// builds of one cache are not a concern.
class Fingerprint {
 public:
  Fingerprint& add(const void* data, size_t bytes);
  Fingerprint& add(const std::string& text);  // length-prefixed: "ab"+"c" differs from "a"+"bc"
  std::string hex() const;                     // 32 hex digits

 private:
  uint64_t a_ = 0xcbf29ce484222325ULL, b_ = 0x84222325cbf29ce4ULL;
};

// The graph's structure (print_graph), its inputs' types and its constants' values.
std::string fingerprint_graph(const graph::Graph& graph);
// The contents of a file; "" when there is no such file.
std::string fingerprint_file(const std::string& path);

}  // namespace tessera::jit
