#pragma once
// Compiled models on disk, keyed by a fingerprint of everything their build
// depends on (graph, target, records, build options, Tessera's cache
// version), so that a second process starts warm. Writes are atomic (a
// temporary file renamed into place): concurrent processes and a crash mid
// write never leave a torn artifact, and a damaged one is rebuilt, not fatal.
#include <optional>
#include <ostream>
#include <string>

#include "runtime/artifact.h"

namespace tessera::jit {

// $XDG_CACHE_HOME/tessera/jit, else $HOME/.cache/tessera/jit.
std::string default_cache_dir();

class ArtifactCache {
 public:
  explicit ArtifactCache(std::string dir);  // created on the first store
  const std::string& dir() const { return dir_; }
  std::string path_of(const std::string& key) const;  // DIR/KEY.tsr
  // The artifact stored under `key`; nullopt when absent or unreadable (the
  // reason goes to `warnings`, and the entry is removed).
  std::optional<runtime::Artifact> find(const std::string& key, std::ostream& warnings) const;
  // Stores atomically; a failure to write is a warning, not an error: the
  // compiled model still runs, it just is not cached.
  void store(const std::string& key, const runtime::Artifact& artifact, std::ostream& warnings) const;

 private:
  std::string dir_;
};

}  // namespace tessera::jit
