#pragma once
// A template's search space: named knobs, each with a list of candidate values.
// A config picks one candidate per knob; configs are numbered by a mixed-radix
// index (the first knob varies fastest), so index <-> choices is a bijection.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::autotvm {

enum class KnobKind { Split, Reorder, Annotate, Other };
std::string to_string(KnobKind k);

struct Knob {
  std::string name;
  KnobKind kind = KnobKind::Other;
  // Split: [l0, l1, ...] lengths of the parts, outermost first (product >= extent);
  // Reorder: a permutation of 0..n-1; Annotate: one of "none", "unroll", "vec",
  // "parallel" per axis; Other: any JSON value.
  std::vector<nlohmann::json> candidates;
  // A knob the template gained after records of it were written: a record
  // without it reads as its first candidate (what the template did before).
  bool added_later = false;
};

// Which factorisations define_split offers.
enum class SplitPolicy {
  Factors,     // every factorisation into divisors of the extent
  PowerOfTwo,  // inner parts powers of two (the outer part takes the rest, guarded)
  Verbose,     // divisors and powers of two together
  Every,       // every inner length up to the maximum (the outer part takes the rest, guarded)
};
SplitPolicy split_policy_from_string(const std::string& s);  // "factors", "power2", "verbose", "every"

// Which orders define_reorder offers.
enum class ReorderPolicy {
  Identity,    // only the given order
  All,         // every permutation
  Interval,    // permutations inside each [begin, end) interval; the rest stays put
  Interleave,  // interleavings of two ordered groups (spatial and reduce axes)
};

class ConfigEntity;

class ConfigSpace {
 public:
  // Splits an axis of `extent` into `num_outputs` parts; inner parts are at
  // most `max_factor` (0: no limit).
  void define_split(const std::string& name, int64_t extent, SplitPolicy policy = SplitPolicy::Factors,
                    int num_outputs = 2, int64_t max_factor = 0);
  // Orders of `num_axes` axes. Interval: `groups` are [begin, end) intervals;
  // Interleave: groups[0] = [0, a), the first group's axes (the rest is the second).
  void define_reorder(const std::string& name, int num_axes, ReorderPolicy policy,
                      const std::vector<std::pair<int, int>>& groups = {});
  // For each of `num_axes` axes one of `options` ("none", "unroll", "vec", "parallel").
  void define_annotate(const std::string& name, int num_axes, const std::vector<std::string>& options);
  void define_knob(const std::string& name, std::vector<nlohmann::json> candidates, bool added_later = false);

  const std::vector<Knob>& knobs() const { return knobs_; }
  const Knob& knob(const std::string& name) const;  // throws tessera::Error when absent
  int64_t size() const;
  ConfigEntity get(int64_t index) const;                    // throws when out of range
  ConfigEntity from_choices(const std::vector<int>& choices) const;
  // The numbering of configs: mixed radix over the knobs' candidate counts,
  // first knob fastest. No JSON is built, so search loops can call these
  // freely. Both throw when out of range.
  int64_t index_of(const std::vector<int>& choices) const;
  std::vector<int> choices_of(int64_t index) const;
  // Knob values as written by ConfigEntity::to_json(); throws when one is not a candidate.
  ConfigEntity from_json(const nlohmann::json& values) const;
  // The config used when a task has no tuning record: the template's choice
  // (set_fallback), else the first candidate of every knob.
  ConfigEntity fallback() const;
  void set_fallback(const nlohmann::json& values) { fallback_ = values; }
  std::string describe() const;  // one line per knob: name, kind, number of candidates

 private:
  std::vector<Knob> knobs_;
  nlohmann::json fallback_;
};

class ConfigEntity {
 public:
  ConfigEntity() = default;
  ConfigEntity(int64_t index, std::vector<int> choices, nlohmann::json values)
      : index_(index), choices_(std::move(choices)), values_(std::move(values)) {}

  int64_t index() const { return index_; }
  const std::vector<int>& choices() const { return choices_; }  // candidate position per knob
  const nlohmann::json& value(const std::string& knob) const;  // throws when absent
  std::vector<int64_t> split(const std::string& knob) const;
  std::vector<int> order(const std::string& knob) const;
  std::vector<std::string> annotations(const std::string& knob) const;
  const nlohmann::json& to_json() const { return values_; }  // {"knob": value, ...}
  std::string str() const;                                  // "[index] {knob: value, ...}"

 private:
  int64_t index_ = -1;
  std::vector<int> choices_;
  nlohmann::json values_ = nlohmann::json::object();
};

}  // namespace tessera::autotvm
