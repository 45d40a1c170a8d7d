#include "graph/einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "ops/reduce.h"
#include "ops/transform.h"
#include "support/checked_math.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::graph {
namespace {

// An equation's letters per operand and for the output; "..." expanded into
// letters of their own (the same for every operand: their ranks must agree).
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

Equation parse_equation(const std::string& text, const std::vector<size_t>& ranks, const std::string& what) {
  std::string compact;
  for (char c : text)
    if (c != ' ') compact += c;
  const size_t arrow = compact.find("->");
  const std::string lhs = compact.substr(0, arrow);
  Equation e;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != ranks.size())
    throw Error(what + ": the equation names " + std::to_string(e.inputs.size()) + " operands, the node has " +
                std::to_string(ranks.size()));
  // The letters "..." stands for: capitals no term uses, the same for every operand.
  std::string ellipsis;
  int64_t ellipsis_rank = -1;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    std::string& term = e.inputs[i];
    const size_t dots = term.find("...");
    for (char c : std::string(term).erase(dots == std::string::npos ? term.size() : dots,
                                          dots == std::string::npos ? 0 : 3))
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw Error(what + ": equation " + support::quoted(text) + " has the character '" + std::string(1, c) + "'");
    if (dots == std::string::npos) continue;
    const int64_t rank = static_cast<int64_t>(ranks[i]) - static_cast<int64_t>(term.size() - 3);
    if (ellipsis_rank >= 0 && rank != ellipsis_rank)
      throw Error(what + ": '...' stands for " + std::to_string(ellipsis_rank) + " and " + std::to_string(rank) +
                  " axes in different operands (broadcasting them is not supported)");
    ellipsis_rank = rank;
    if (ellipsis.empty())
      for (char c = 'Z'; static_cast<int64_t>(ellipsis.size()) < rank && c >= 'A'; --c)
        if (compact.find(c) == std::string::npos) ellipsis += c;
    term.replace(dots, 3, ellipsis);
  }
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (e.inputs[i].size() != ranks[i])
      throw Error(what + ": term " + support::quoted(e.inputs[i]) + " has " + std::to_string(e.inputs[i].size()) +
                  " letters for an operand of rank " + std::to_string(ranks[i]));
  if (arrow != std::string::npos) {
    e.output = compact.substr(arrow + 2);
    if (const size_t dots = e.output.find("..."); dots != std::string::npos) e.output.replace(dots, 3, ellipsis);
  } else {  // implicit: "..." first, then the letters used once, alphabetically
    std::map<char, int> uses;
    for (const std::string& term : e.inputs)
      for (char c : term) ++uses[c];
    e.output = ellipsis;
    for (const auto& [c, n] : uses)
      if (n == 1 && ellipsis.find(c) == std::string::npos) e.output += c;
  }
  for (const std::string& term : e.inputs)
    if (std::set<char>(term.begin(), term.end()).size() != term.size())
      throw Error(what + ": term " + support::quoted(term) + " repeats a letter (a diagonal): not supported");
  return e;
}

std::vector<int64_t> permutation(const std::string& from, const std::string& to) {
  std::vector<int64_t> perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  return perm;
}

}  // namespace

NodeId einsum(GraphBuilder& b, const std::string& equation, std::vector<NodeId> x, const std::string& name) {
  const std::string what = "einsum " + support::quoted(equation) + " (" + name + ")";
  if (x.empty() || x.size() > 2)
    throw Error(what + ": " + std::to_string(x.size()) + " operands (one or two are supported)");
  std::vector<size_t> ranks;
  for (NodeId v : x) ranks.push_back(b.shape(v).size());
  const Equation e = parse_equation(equation, ranks, what);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t d = 0; d < e.inputs[i].size(); ++d) {
      const char c = e.inputs[i][d];
      const int64_t extent = b.shape(x[i])[d];
      if (size.count(c) && size[c] != extent)
        throw Error(what + ": letter '" + std::string(1, c) + "' is " + std::to_string(size[c]) +
                    " in one operand and " + std::to_string(extent) + " in another (broadcasting is not supported)");
      size[c] = extent;
    }
  for (char c : e.output)
    if (!size.count(c)) throw Error(what + ": the output's letter '" + std::string(1, c) + "' is in no operand");
  auto used_elsewhere = [&](char c, size_t operand) {
    if (e.output.find(c) != std::string::npos) return true;
    for (size_t j = 0; j < e.inputs.size(); ++j)
      if (j != operand && e.inputs[j].find(c) != std::string::npos) return true;
    return false;
  };
  // Sum away each operand's letters nobody else reads.
  std::vector<std::string> terms = e.inputs;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> axes;
    std::string kept;
    for (size_t d = 0; d < terms[i].size(); ++d) {
      if (used_elsewhere(terms[i][d], i)) kept += terms[i][d];
      else axes.push_back(static_cast<int64_t>(d));
    }
    if (axes.empty()) continue;
    x[i] = b.add_node(Op::named("reduce_sum"), name + ".sum" + std::to_string(i), {x[i]},
                      ops::ReduceAttrs{axes, false});
    terms[i] = kept;
  }
  auto transposed = [&](NodeId v, const std::string& from, const std::string& to, const std::string& suffix) {
    const std::vector<int64_t> perm = permutation(from, to);
    return ops::is_identity_permutation(perm) ? v : b.transpose(v, perm, name + suffix);
  };
  if (x.size() == 1) return transposed(x[0], terms[0], e.output, "");

  std::string batch, left, right, contracted;
  for (char c : terms[0]) {
    const bool in_b = terms[1].find(c) != std::string::npos, in_out = e.output.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : contracted) : left) += c;
  }
  for (char c : terms[1])
    if (terms[0].find(c) == std::string::npos) right += c;
  auto extent = [&](const std::string& letters) {
    Shape s;
    for (char c : letters) s.push_back(size[c]);
    return support::bounded_product(s, what);
  };
  const NodeId a3 = b.reshape(transposed(x[0], terms[0], batch + left + contracted, ".aT"),
                              {extent(batch), extent(left), extent(contracted)}, name + ".a3");
  const NodeId b3 = b.reshape(transposed(x[1], terms[1], batch + right + contracted, ".bT"),
                              {extent(batch), extent(right), extent(contracted)}, name + ".b3");
  const NodeId product = b.batch_matmul(a3, b3, name + ".bmm");
  Shape unflat;
  for (char c : batch + left + right) unflat.push_back(size[c]);
  const NodeId y = b.reshape(product, unflat, name + ".unflat");
  return transposed(y, batch + left + right, e.output, ".out");
}

}  // namespace tessera::graph
