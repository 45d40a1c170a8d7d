#pragma once
// How schedule steps name what they make, in one place. A split of "ow" into
// N lengths makes "ow.0" (the outer loop) to "ow.N"; a fuse of "n" and "c"
// makes "n@c"; cache_write of stage "conv" makes the stage "conv.local";
// cache_read of tensor "W" makes the stage "W.cache" with axes "a<dim>";
// rfactor of stage "sum" over axis "k" makes stage "sum.rf" and the
// iterators "k_o" and "k_i".
// Hand-written schedules and templates build names with these functions,
// never by spelling the separators.
#include <cstddef>
#include <string>
#include <vector>

namespace tessera::schedule {

inline std::string split_part(const std::string& iter, size_t part) { return iter + "." + std::to_string(part); }

inline std::string fused_name(const std::vector<std::string>& iters) {
  std::string s;
  for (const auto& i : iters) s += (s.empty() ? "" : "@") + i;
  return s;
}

inline std::string cache_write_name(const std::string& stage) { return stage + ".local"; }

inline std::string cache_read_name(const std::string& tensor) { return tensor + ".cache"; }
inline std::string cache_read_axis(size_t dim) { return "a" + std::to_string(dim); }

inline std::string rfactor_name(const std::string& stage) { return stage + ".rf"; }
inline std::string rfactor_outer(const std::string& axis) { return axis + "_o"; }
inline std::string rfactor_inner(const std::string& axis) { return axis + "_i"; }

}  // namespace tessera::schedule
