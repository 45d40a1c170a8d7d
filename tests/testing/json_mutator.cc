#include "testing/json_mutator.h"

#include <cstdint>
#include <limits>

namespace tessera::testing {

using nlohmann::json;

namespace {

// Every node of a document, parents before children.
void collect(json& j, std::vector<json*>& out) {
  out.push_back(&j);
  if (j.is_array() || j.is_object())
    for (auto& child : j) collect(child, out);
}

}  // namespace

JsonMutator::JsonMutator(uint64_t seed, std::vector<std::string> names) : rng_(seed), names_(std::move(names)) {
  for (const char* s : {"",
                        "split",
                        "fuse",
                        "reorder",
                        "annotate",
                        "compute_at",
                        "compute_inline",
                        "compute_root",
                        "cache_write",
                        "pragma",
                        "parallel",
                        "vectorize",
                        "unroll",
                        "none",
                        "none",
                        "error",
                        "auto_unroll_max_step$16",
                        "auto_unroll_max_step$1000000000",
                        "auto_unroll_max_step$-5",
                        "auto_unroll_max_step$",
                        "run-timeout",
                        "wrong-answer",
                        "\xff\xfe junk",
                        "a@b",
                        "x.0.1"})
    names_.push_back(s);
  names_.push_back(std::string(5000, 'n'));
}

json JsonMutator::random_value(int depth) {
  switch (below(depth > 2 ? 9 : 11)) {
    case 0: return nullptr;
    case 1: return below(2) == 1;
    case 2: {
      static const std::vector<json> kNumbers = {0,
                                                 -1,
                                                 1,
                                                 2,
                                                 3,
                                                 7,
                                                 16,
                                                 1000000,
                                                 int64_t{1} << 32,
                                                 std::numeric_limits<int64_t>::max(),
                                                 std::numeric_limits<int64_t>::min(),
                                                 std::numeric_limits<uint64_t>::max(),
                                                 0.5,
                                                 -1e-300,
                                                 1e300};
      return kNumbers[below(kNumbers.size())];
    }
    case 3: return static_cast<int64_t>(below(40)) - 4;
    case 4:
    case 5:
    case 6: return names_[below(names_.size())];
    case 7: return json::array();
    case 8: return json::object();
    case 9: {
      json a = json::array();
      for (size_t i = 0, n = below(5); i < n; ++i) a.push_back(random_value(depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (size_t i = 0, n = below(4); i < n; ++i) o[names_[below(names_.size())]] = random_value(depth + 1);
      return o;
    }
  }
}

void JsonMutator::edit(json& doc) {
  std::vector<json*> nodes;
  collect(doc, nodes);
  json& node = *nodes[below(nodes.size())];
  switch (below(8)) {
    case 0:
    case 1: node = random_value(0); return;
    case 2:  // a sibling's value in another place
      node = *nodes[below(nodes.size())];
      return;
    default: break;
  }
  if (node.is_array() && !node.empty()) {
    const size_t i = below(node.size());
    switch (below(4)) {
      case 0: node.erase(node.begin() + static_cast<std::ptrdiff_t>(i)); return;
      case 1: node.insert(node.begin() + static_cast<std::ptrdiff_t>(i), json(node[i])); return;
      case 2: std::swap(node[i], node[below(node.size())]); return;
      default: node.push_back(random_value(1)); return;
    }
  }
  if (node.is_object() && !node.empty()) {
    auto it = node.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(below(node.size())));
    const std::string key = it.key();
    switch (below(3)) {
      case 0: node.erase(key); return;
      case 1: node[names_[below(names_.size())]] = random_value(1); return;
      default: node[key] = random_value(1); return;
    }
  }
  node = random_value(0);
}

void JsonMutator::damage(std::string& text) {
  switch (below(6)) {
    case 0:
      if (!text.empty()) text[below(text.size())] = static_cast<char>(below(256));
      return;
    case 1: text.resize(below(text.size() + 1)); return;  // truncated
    case 2: text.insert(below(text.size() + 1), std::string(1 + below(3), "[{\",:]}"[below(7)])); return;
    case 3: text = std::string(100000, '[') + text + std::string(100000, ']'); return;  // nested deep
    case 4: {                                                                           // a number past any range
      const size_t at = text.find_first_of("0123456789");
      if (at != std::string::npos) text.insert(at, "1e999,");
      return;
    }
    default: text += below(2) ? std::string("\0junk", 5) : std::string("\n{}"); return;
  }
}

std::string JsonMutator::mutate(const json& seed) {
  json doc = seed;
  for (size_t i = 0, n = 1 + below(4); i < n; ++i) edit(doc);
  std::string text = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (below(5) == 0) damage(text);
  return text;
}

}  // namespace tessera::testing
