#pragma once
// Mutations of JSON documents for the fuzz tests: a hostile or careless
// user's edits (extreme numbers, wrong types, swapped names, lost or repeated
// entries) and damaged bytes (flips, truncation, deep nesting), all drawn
// from a seeded generator so that every run tries the same cases.
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace tessera::testing {

class JsonMutator {
 public:
  // `names`: strings worth trying where a string stands (stage and iterator
  // names of the workload, step kinds, annotations).
  JsonMutator(uint64_t seed, std::vector<std::string> names);

  // `seed` changed by 1 to 4 structural edits; sometimes the text is then
  // damaged byte-wise too, so the result need not be JSON at all.
  std::string mutate(const nlohmann::json& seed);

 private:
  nlohmann::json random_value(int depth);
  void edit(nlohmann::json& doc);
  void damage(std::string& text);
  size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::mt19937_64 rng_;
  std::vector<std::string> names_;
};

}  // namespace tessera::testing
