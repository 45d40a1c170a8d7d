#include "jit/artifact_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace tessera::jit {

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tessera/jit";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/tessera/jit";
}

ArtifactCache::ArtifactCache(std::string dir) : dir_(std::move(dir)) {}

std::string ArtifactCache::path_of(const std::string& key) const { return dir_ + "/" + key + ".tsr"; }

std::optional<runtime::Artifact> ArtifactCache::find(const std::string& key, std::ostream& warnings) const {
  const std::string path = path_of(key);
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    return runtime::read_artifact(path);
  } catch (const std::exception& e) {
    warnings << fmt::format("tessera jit: the cached {} is unreadable ({}); compiling again\n", path, e.what());
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return std::nullopt;
  }
}

void ArtifactCache::store(const std::string& key, const runtime::Artifact& artifact, std::ostream& warnings) const {
  const std::string path = path_of(key);
  const std::string temporary = fmt::format("{}.{}.tmp", path, ::getpid());
  try {
    std::filesystem::create_directories(dir_);
    runtime::write_artifact(artifact, temporary);
    std::filesystem::rename(temporary, path);
  } catch (const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove(temporary, ec);
    warnings << fmt::format("tessera jit: cannot cache the compiled model in {} ({})\n", dir_, e.what());
  }
}

}  // namespace tessera::jit
