// ConfigSpace: knob candidates per policy, the index <-> choices bijection,
// JSON round trips, errors and the fallback.
#include "autotvm/config_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "tessera/error.h"

namespace tessera::autotvm {
namespace {

using nlohmann::json;

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

ConfigSpace mixed_space() {
  ConfigSpace s;
  s.define_split("tile_x", 56, SplitPolicy::Factors, 3);
  s.define_split("tile_k", 30, SplitPolicy::Verbose, 2, 16);
  s.define_reorder("order", 4, ReorderPolicy::All);
  s.define_annotate("ann", 2, {"none", "unroll", "vec"});
  s.define_knob("unroll_kw", {true, false});
  return s;
}

TEST(AutotvmConfigSpace, IndexAndChoicesAreABijection) {
  ConfigSpace s = mixed_space();
  const int64_t n = s.size();
  int64_t expected = 1;
  for (const auto& k : s.knobs()) expected *= static_cast<int64_t>(k.candidates.size());
  ASSERT_EQ(n, expected);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    int64_t index = i < 2 ? (i == 0 ? 0 : n - 1) : pick(rng);
    ConfigEntity c = s.get(index);
    EXPECT_EQ(c.index(), index);
    EXPECT_EQ(s.from_choices(c.choices()).index(), index);
    EXPECT_EQ(s.from_json(c.to_json()).index(), index);
    seen.insert(c.to_json().dump() + "#" + std::to_string(index));
  }
  // Distinct indices give distinct values: every choices vector maps back to
  // its index.
  std::vector<int> choices(s.knobs().size(), 0);
  for (size_t k = 0; k < choices.size(); ++k) choices[k] = static_cast<int>(s.knobs()[k].candidates.size()) - 1;
  EXPECT_EQ(s.from_choices(choices).index(), n - 1);
}

TEST(AutotvmConfigSpace, FactorSplitsMultiplyToTheExtent) {
  ConfigSpace s;
  s.define_split("x", 24, SplitPolicy::Factors, 3);
  const auto& c = s.knob("x").candidates;
  // Ordered factorisations of 24 = 2^3 * 3 into 3 parts: C(5,2) * C(3,2) = 30.
  EXPECT_EQ(c.size(), 30u);
  std::set<json> unique(c.begin(), c.end());
  EXPECT_EQ(unique.size(), c.size());
  for (const auto& v : c) {
    auto l = v.get<std::vector<int64_t>>();
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[0] * l[1] * l[2], 24) << v.dump();
  }
}

TEST(AutotvmConfigSpace, SplitsRespectMaxFactorAndPolicy) {
  for (auto policy : {SplitPolicy::Factors, SplitPolicy::PowerOfTwo, SplitPolicy::Verbose, SplitPolicy::Every}) {
    ConfigSpace s;
    s.define_split("x", 56, policy, 3, 8);
    std::set<int64_t> inner_values;
    for (const auto& v : s.knob("x").candidates) {
      auto l = v.get<std::vector<int64_t>>();
      int64_t inner = l[1] * l[2];
      EXPECT_LE(l[1], 8);
      EXPECT_LE(l[2], 8);
      EXPECT_GE(l[0] * inner, 56) << v.dump();        // covers the extent
      EXPECT_LT((l[0] - 1) * inner, 56) << v.dump();  // with no empty outer iteration
      if (policy == SplitPolicy::Factors) EXPECT_EQ(56 % inner, 0);
      if (policy == SplitPolicy::PowerOfTwo) EXPECT_TRUE(is_power_of_two(l[1]) && is_power_of_two(l[2]));
      inner_values.insert(l[1]);
      inner_values.insert(l[2]);
    }
    if (policy == SplitPolicy::Factors) EXPECT_EQ(inner_values, (std::set<int64_t>{1, 2, 4, 7, 8}));
    if (policy == SplitPolicy::PowerOfTwo) EXPECT_EQ(inner_values, (std::set<int64_t>{1, 2, 4, 8}));
    if (policy == SplitPolicy::Verbose) EXPECT_EQ(inner_values, (std::set<int64_t>{1, 2, 4, 7, 8}));
    if (policy == SplitPolicy::Every) EXPECT_EQ(inner_values, (std::set<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  }
  ConfigSpace odd;
  odd.define_split("x", 7, SplitPolicy::PowerOfTwo);
  EXPECT_EQ(odd.knob("x").candidates, (std::vector<json>{{7, 1}, {4, 2}, {2, 4}}));
  EXPECT_EQ(split_policy_from_string("power2"), SplitPolicy::PowerOfTwo);
  EXPECT_EQ(split_policy_from_string("every"), SplitPolicy::Every);
  EXPECT_THROW(split_policy_from_string("halves"), Error);
}

bool is_permutation_of_iota(const std::vector<int>& p) {
  std::vector<int> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i)) return false;
  return true;
}

std::vector<std::vector<int>> orders(const ConfigSpace& s, const std::string& knob) {
  std::vector<std::vector<int>> out;
  for (const auto& v : s.knob(knob).candidates) out.push_back(v.get<std::vector<int>>());
  return out;
}

TEST(AutotvmConfigSpace, ReorderPoliciesGiveDistinctValidPermutations) {
  ConfigSpace s;
  s.define_reorder("identity", 5, ReorderPolicy::Identity);
  s.define_reorder("all", 4, ReorderPolicy::All);
  s.define_reorder("interval", 6, ReorderPolicy::Interval, {{0, 2}, {3, 6}});
  s.define_reorder("interleave", 5, ReorderPolicy::Interleave, {{0, 2}});
  const std::map<std::string, size_t> expected = {
      {"identity", 1}, {"all", 24}, {"interval", 2 * 6}, {"interleave", 10}};
  for (const auto& [name, count] : expected) {
    auto o = orders(s, name);
    EXPECT_EQ(o.size(), count) << name;
    std::set<std::vector<int>> unique(o.begin(), o.end());
    EXPECT_EQ(unique.size(), o.size()) << name;
    for (const auto& p : o) EXPECT_TRUE(is_permutation_of_iota(p)) << name;
    // The given order comes first, so the fallback keeps the declared loop
    // nest.
    std::vector<int> identity(o[0].size());
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(o[0], identity) << name;
  }
  for (const auto& p : orders(s, "interval")) {
    EXPECT_EQ(p[2], 2);  // outside every interval: stays put
    EXPECT_TRUE((p[0] < 2 && p[1] < 2));
  }
  for (const auto& p : orders(s, "interleave")) {
    // Each group keeps its own order.
    auto pos = [&](int axis) { return std::find(p.begin(), p.end(), axis) - p.begin(); };
    EXPECT_LT(pos(0), pos(1));
    EXPECT_LT(pos(2), pos(3));
    EXPECT_LT(pos(3), pos(4));
  }
  ConfigSpace bad;
  EXPECT_THROW(bad.define_reorder("x", 4, ReorderPolicy::Interval, {{0, 3}, {2, 4}}), Error);
  EXPECT_THROW(bad.define_reorder("y", 4, ReorderPolicy::Interleave, {{0, 5}}), Error);
}

TEST(AutotvmConfigSpace, AnnotateOffersEveryCombination) {
  ConfigSpace s;
  s.define_annotate("ann", 3, {"none", "unroll", "vec"});
  const auto& c = s.knob("ann").candidates;
  EXPECT_EQ(c.size(), 27u);
  std::set<json> unique(c.begin(), c.end());
  EXPECT_EQ(unique.size(), 27u);
  EXPECT_EQ(c[0], json({"none", "none", "none"}));
  EXPECT_EQ(s.get(26).annotations("ann"), (std::vector<std::string>{"vec", "vec", "vec"}));
  EXPECT_THROW(s.define_annotate("bad", 1, {"tensorize"}), Error);
}

TEST(AutotvmConfigSpace, JsonRoundTripAndErrors) {
  ConfigSpace s = mixed_space();
  ConfigEntity c = s.get(12345 % s.size());
  json j = json::parse(c.to_json().dump());
  EXPECT_EQ(s.from_json(j).choices(), c.choices());
  EXPECT_EQ(c.split("tile_x").size(), 3u);
  EXPECT_EQ(c.order("order").size(), 4u);
  EXPECT_NE(c.str().find("tile_x"), std::string::npos);

  EXPECT_THROW(s.get(-1), Error);
  EXPECT_THROW(s.get(s.size()), Error);
  EXPECT_THROW(s.knob("nope"), Error);
  EXPECT_THROW(c.value("nope"), Error);
  json unknown = j;
  unknown["nope"] = 1;
  EXPECT_THROW(s.from_json(unknown), Error);
  json not_candidate = j;
  not_candidate["tile_x"] = {1, 5, 11};
  EXPECT_THROW(s.from_json(not_candidate), Error);
  json missing = j;
  missing.erase("order");
  EXPECT_THROW(s.from_json(missing), Error);
  EXPECT_THROW(s.from_choices({0, 0}), Error);
  EXPECT_THROW(s.define_knob("order", {1, 2}), Error);  // defined twice
  EXPECT_THROW(s.define_knob("empty", {}), Error);
  EXPECT_THROW(s.define_split("zero", 0), Error);
}

TEST(AutotvmConfigSpace, FallbackIsTheTemplatesChoiceElseFirstCandidates) {
  ConfigSpace s = mixed_space();
  EXPECT_EQ(s.fallback().index(), 0);
  s.set_fallback({{"unroll_kw", false}, {"tile_x", {7, 2, 4}}});
  ConfigEntity f = s.fallback();
  EXPECT_EQ(f.value("unroll_kw"), json(false));
  EXPECT_EQ(f.split("tile_x"), (std::vector<int64_t>{7, 2, 4}));
  EXPECT_EQ(f.choices()[2],
            0);  // knobs the template did not name take their first candidate
  s.set_fallback({{"tile_x", {5, 5, 5}}});
  EXPECT_THROW(s.fallback(), Error);
  EXPECT_NE(s.describe().find("tile_k: split"), std::string::npos);
}

}  // namespace
}  // namespace tessera::autotvm
