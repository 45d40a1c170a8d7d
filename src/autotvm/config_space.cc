#include "autotvm/config_space.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "tessera/error.h"

namespace tessera::autotvm {

using nlohmann::json;

std::string to_string(KnobKind k) {
  switch (k) {
    case KnobKind::Split:
      return "split";
    case KnobKind::Reorder:
      return "reorder";
    case KnobKind::Annotate:
      return "annotate";
    case KnobKind::Other:
      return "other";
  }
  return "?";
}

SplitPolicy split_policy_from_string(const std::string& s) {
  if (s == "factors") return SplitPolicy::Factors;
  if (s == "power2") return SplitPolicy::PowerOfTwo;
  if (s == "verbose") return SplitPolicy::Verbose;
  if (s == "every") return SplitPolicy::Every;
  throw Error("unknown split policy '" + s + "' (valid: factors, power2, verbose, every)");
}

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

std::vector<int64_t> powers_of_two_up_to(int64_t n) {
  std::vector<int64_t> p;
  for (int64_t v = 1; v <= n; v *= 2) p.push_back(v);
  return p;
}

// Every choice of `parts` inner lengths from `values` whose product stays
// within `extent` (and divides it when `exact`), in lexicographic order; the
// outer length takes the rest, rounded up.
void enumerate_splits(const std::vector<int64_t>& values, int64_t extent, bool exact, int parts,
                      std::vector<int64_t>& inner, int64_t product, std::vector<json>& out) {
  if (static_cast<int>(inner.size()) == parts) {
    if (exact && extent % product != 0) return;
    std::vector<int64_t> lengths{(extent + product - 1) / product};
    lengths.insert(lengths.end(), inner.begin(), inner.end());
    out.push_back(lengths);
    return;
  }
  for (int64_t v : values) {
    if (product * v > extent) break;  // values are ascending
    if (exact && extent % (product * v) != 0) continue;
    inner.push_back(v);
    enumerate_splits(values, extent, exact, parts, inner, product * v, out);
    inner.pop_back();
  }
}

void add_knob(std::vector<Knob>& knobs, Knob k) {
  if (k.name.empty()) throw Error("config space: a knob needs a name");
  for (const auto& other : knobs)
    if (other.name == k.name) throw Error("config space: knob '" + k.name + "' is defined twice");
  if (k.candidates.empty()) throw Error("config space: knob '" + k.name + "' has no candidates");
  knobs.push_back(std::move(k));
}

int64_t checked_product(int64_t a, int64_t b, const std::string& what) {
  if (b != 0 && a > std::numeric_limits<int64_t>::max() / b) throw Error(what + ": the space is too large to index");
  return a * b;
}

}  // namespace

void ConfigSpace::define_split(const std::string& name, int64_t extent, SplitPolicy policy, int num_outputs,
                               int64_t max_factor) {
  const std::string where = "define_split '" + name + "'";
  if (extent <= 0) throw Error(where + ": extent " + std::to_string(extent) + " is not positive");
  if (num_outputs < 1) throw Error(where + ": num_outputs must be at least 1");
  const int64_t limit = max_factor > 0 ? std::min(max_factor, extent) : extent;
  std::vector<int64_t> values;
  const std::vector<int64_t> divs = divisors(extent), pows = powers_of_two_up_to(extent);
  if (policy != SplitPolicy::PowerOfTwo) values = divs;
  if (policy != SplitPolicy::Factors) values.insert(values.end(), pows.begin(), pows.end());
  if (policy == SplitPolicy::Every)
    for (int64_t v = 1; v <= limit; ++v) values.push_back(v);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  values.erase(std::remove_if(values.begin(), values.end(), [&](int64_t v) { return v > limit; }), values.end());

  Knob k{name, KnobKind::Split, {}};
  std::vector<int64_t> inner;
  enumerate_splits(values, extent, policy == SplitPolicy::Factors, num_outputs - 1, inner, 1, k.candidates);
  add_knob(knobs_, std::move(k));
}

void ConfigSpace::define_reorder(const std::string& name, int num_axes, ReorderPolicy policy,
                                 const std::vector<std::pair<int, int>>& groups) {
  const std::string where = "define_reorder '" + name + "'";
  if (num_axes < 1) throw Error(where + ": needs at least one axis");
  std::vector<int> identity(num_axes);
  std::iota(identity.begin(), identity.end(), 0);
  Knob k{name, KnobKind::Reorder, {}};
  switch (policy) {
    case ReorderPolicy::Identity:
      k.candidates.push_back(identity);
      break;
    case ReorderPolicy::All: {
      if (num_axes > 8) throw Error(where + ": all permutations of more than 8 axes is too many");
      std::vector<int> p = identity;
      do k.candidates.push_back(p);
      while (std::next_permutation(p.begin(), p.end()));
      break;
    }
    case ReorderPolicy::Interval: {
      // The product of the permutations of every interval, the first interval
      // varying slowest; positions outside the intervals stay put.
      std::vector<bool> taken(num_axes, false);
      for (auto [b, e] : groups) {
        if (b < 0 || e > num_axes || b >= e)
          throw Error(where + ": bad interval [" + std::to_string(b) + ", " + std::to_string(e) + ")");
        if (e - b > 8) throw Error(where + ": an interval of more than 8 axes has too many permutations");
        for (int i = b; i < e; ++i) {
          if (taken[i]) throw Error(where + ": intervals overlap at axis " + std::to_string(i));
          taken[i] = true;
        }
      }
      std::vector<std::vector<int>> orders{identity};
      for (auto [b, e] : groups) {
        std::vector<std::vector<int>> next;
        for (const auto& base : orders) {
          std::vector<int> p = base;
          std::sort(p.begin() + b, p.begin() + e);
          do next.push_back(p);
          while (std::next_permutation(p.begin() + b, p.begin() + e));
        }
        orders = std::move(next);
      }
      for (auto& o : orders) k.candidates.push_back(o);
      break;
    }
    case ReorderPolicy::Interleave: {
      // Group A = axes [0, a), group B = the rest; every merge of the two that
      // keeps each group's own order. Choosing A's positions in lexicographic
      // order makes the identity (A then B) the first candidate.
      if (groups.size() != 1 || groups[0].first != 0 || groups[0].second < 0 || groups[0].second > num_axes)
        throw Error(where + ": interleave takes one group [0, a) naming the first group's axes");
      const int a = groups[0].second;
      std::vector<bool> in_a(num_axes, false);
      std::fill(in_a.begin(), in_a.begin() + a, true);
      // prev_permutation from {true.., false..} visits position sets of A in
      // lexicographic order of positions.
      do {
        std::vector<int> order;
        int next_a = 0, next_b = a;
        for (int i = 0; i < num_axes; ++i) order.push_back(in_a[i] ? next_a++ : next_b++);
        k.candidates.push_back(order);
      } while (std::prev_permutation(in_a.begin(), in_a.end()));
      break;
    }
  }
  add_knob(knobs_, std::move(k));
}

void ConfigSpace::define_annotate(const std::string& name, int num_axes, const std::vector<std::string>& options) {
  const std::string where = "define_annotate '" + name + "'";
  if (num_axes < 1) throw Error(where + ": needs at least one axis");
  if (options.empty()) throw Error(where + ": no options given");
  static const std::set<std::string> valid{"none", "unroll", "vec", "parallel"};
  for (const auto& o : options)
    if (!valid.count(o)) throw Error(where + ": unknown option '" + o + "' (valid: none, unroll, vec, parallel)");
  int64_t count = 1;
  for (int i = 0; i < num_axes; ++i) count = checked_product(count, static_cast<int64_t>(options.size()), where);
  if (count > 1'000'000) throw Error(where + ": too many combinations");
  Knob k{name, KnobKind::Annotate, {}};
  for (int64_t c = 0; c < count; ++c) {
    std::vector<std::string> combo;
    int64_t rest = c;
    for (int i = 0; i < num_axes; ++i, rest /= static_cast<int64_t>(options.size()))
      combo.push_back(options[rest % options.size()]);  // the first axis varies fastest
    k.candidates.push_back(combo);
  }
  add_knob(knobs_, std::move(k));
}

void ConfigSpace::define_knob(const std::string& name, std::vector<json> candidates, bool added_later) {
  add_knob(knobs_, Knob{name, KnobKind::Other, std::move(candidates), added_later});
}

const Knob& ConfigSpace::knob(const std::string& name) const {
  for (const auto& k : knobs_)
    if (k.name == name) return k;
  std::string have;
  for (const auto& k : knobs_) have += (have.empty() ? "" : ", ") + k.name;
  throw Error("config space has no knob '" + name + "' (knobs: " + have + ")");
}

int64_t ConfigSpace::size() const {
  int64_t n = 1;
  for (const auto& k : knobs_) {
    if (k.candidates.empty()) throw Error("config space: knob '" + k.name + "' has no candidates");
    n = checked_product(n, static_cast<int64_t>(k.candidates.size()), "config space");
  }
  return n;
}

int64_t ConfigSpace::index_of(const std::vector<int>& choices) const {
  if (choices.size() != knobs_.size())
    throw Error("config: " + std::to_string(choices.size()) + " choices for " + std::to_string(knobs_.size()) +
                " knobs");
  int64_t index = 0, stride = 1;
  for (size_t i = 0; i < knobs_.size(); ++i) {
    const Knob& k = knobs_[i];
    if (choices[i] < 0 || choices[i] >= static_cast<int>(k.candidates.size()))
      throw Error("config: choice " + std::to_string(choices[i]) + " of knob '" + k.name + "' is out of range [0, " +
                  std::to_string(k.candidates.size()) + ")");
    index += choices[i] * stride;
    stride *= static_cast<int64_t>(k.candidates.size());
  }
  return index;
}

std::vector<int> ConfigSpace::choices_of(int64_t index) const {
  const int64_t n = size();
  if (index < 0 || index >= n)
    throw Error("config index " + std::to_string(index) + " is out of range [0, " + std::to_string(n) + ")");
  std::vector<int> choices;
  for (const auto& k : knobs_) {
    const auto radix = static_cast<int64_t>(k.candidates.size());
    choices.push_back(static_cast<int>(index % radix));
    index /= radix;
  }
  return choices;
}

ConfigEntity ConfigSpace::get(int64_t index) const { return from_choices(choices_of(index)); }

ConfigEntity ConfigSpace::from_choices(const std::vector<int>& choices) const {
  const int64_t index = index_of(choices);  // checks the choices
  json values = json::object();
  for (size_t i = 0; i < knobs_.size(); ++i) values[knobs_[i].name] = knobs_[i].candidates[choices[i]];
  return ConfigEntity(index, choices, std::move(values));
}

namespace {

// Candidate position of `value` in knob `k`; knobs absent from `values` take
// `missing` (or throw when it is negative).
int choice_of(const Knob& k, const json& values, int missing) {
  auto it = values.find(k.name);
  if (it == values.end()) {
    if (missing >= 0) return missing;
    if (k.added_later) return 0;
    throw Error("config has no value for knob '" + k.name + "'");
  }
  for (size_t c = 0; c < k.candidates.size(); ++c)
    if (k.candidates[c] == *it) return static_cast<int>(c);
  throw Error("config value " + it->dump() + " is not a candidate of knob '" + k.name + "' (" +
              std::to_string(k.candidates.size()) + " candidates)");
}

std::vector<int> choices_from_json(const std::vector<Knob>& knobs, const json& values, int missing) {
  if (!values.is_object()) throw Error("config values must be a JSON object, got " + values.dump());
  for (auto it = values.begin(); it != values.end(); ++it) {
    bool known = std::any_of(knobs.begin(), knobs.end(), [&](const Knob& k) { return k.name == it.key(); });
    if (!known) throw Error("config names unknown knob '" + it.key() + "'");
  }
  std::vector<int> choices;
  for (const auto& k : knobs) choices.push_back(choice_of(k, values, missing));
  return choices;
}

}  // namespace

ConfigEntity ConfigSpace::from_json(const json& values) const {
  return from_choices(choices_from_json(knobs_, values, -1));
}

ConfigEntity ConfigSpace::fallback() const {
  // The template may name only the knobs it cares about; the rest take their
  // first candidate.
  if (fallback_.is_null()) return from_choices(std::vector<int>(knobs_.size(), 0));
  return from_choices(choices_from_json(knobs_, fallback_, 0));
}

std::string ConfigSpace::describe() const {
  std::ostringstream os;
  for (const auto& k : knobs_)
    os << k.name << ": " << to_string(k.kind) << ", " << k.candidates.size() << " candidates\n";
  os << "size: " << size();
  return os.str();
}

const json& ConfigEntity::value(const std::string& knob) const {
  auto it = values_.find(knob);
  if (it == values_.end()) throw Error("config " + str() + " has no knob '" + knob + "'");
  return *it;
}

std::vector<int64_t> ConfigEntity::split(const std::string& knob) const {
  return value(knob).get<std::vector<int64_t>>();
}

std::vector<int> ConfigEntity::order(const std::string& knob) const { return value(knob).get<std::vector<int>>(); }

std::vector<std::string> ConfigEntity::annotations(const std::string& knob) const {
  return value(knob).get<std::vector<std::string>>();
}

std::string ConfigEntity::str() const {
  std::string s = "[" + std::to_string(index_) + "] {";
  bool first = true;
  for (auto it = values_.begin(); it != values_.end(); ++it) {
    s += (first ? "" : ", ") + it.key() + ": " + it.value().dump();
    first = false;
  }
  return s + "}";
}

}  // namespace tessera::autotvm
