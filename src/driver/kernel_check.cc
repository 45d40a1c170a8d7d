#include "driver/kernel_check.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "graph/interpreter.h"
#include "measure/kernel_args.h"

namespace tessera::driver {
namespace {

bool is_integer(graph::DataType t) {
  return t == graph::DataType::kInt8 || t == graph::DataType::kUInt8 || t == graph::DataType::kInt32;
}

}  // namespace

bool has_integer_values(const graph::Graph& g) {
  for (const graph::Node& n : g.nodes())
    if (n.op != graph::Op::kConstant && is_integer(n.type.dtype)) return true;
  return false;
}

KernelCheck check_each_kernel(const graph::Graph& g, const runtime::GraphExecutor& ex,
                              const std::vector<runtime::NDArray>& inputs) {
  KernelCheck check;
  std::map<graph::NodeId, runtime::NDArray> values;
  std::set<graph::NodeId> held;  // values a tensor holds (compiled), inputs and constants
  const std::vector<graph::NodeId> input_ids = g.input_ids();
  for (const graph::Node& n : g.nodes()) {
    if (n.op == graph::Op::kInput) {
      const size_t i = static_cast<size_t>(std::find(input_ids.begin(), input_ids.end(), n.id) - input_ids.begin());
      values.emplace(n.id, runtime::copy_of(inputs.at(i)));
      held.insert(n.id);
      continue;
    }
    if (n.op == graph::Op::kConstant) {
      values.emplace(n.id, runtime::copy_of(*n.value));
      held.insert(n.id);
      continue;
    }
    std::vector<const runtime::NDArray*> args;
    for (graph::NodeId in : n.inputs) args.push_back(&values.at(in));
    runtime::NDArray want = graph::evaluate(g, n, args);
    std::optional<runtime::NDArray> got = ex.tensor_value(n.name);
    if (!got || got->shape() != want.shape()) {  // fused into a later kernel (or a view of another shape)
      values.emplace(n.id, std::move(want));
      continue;
    }
    if (is_integer(n.type.dtype)) {
      ++check.integer_values;
      // From a float value evaluated here, not read back: its rounding may differ.
      bool from_float = false;
      for (graph::NodeId in : n.inputs)
        from_float |= !held.count(in) && !is_integer(g.node(in).type.dtype);
      int64_t differ = 0;
      double most = 0;
      for (int64_t i = 0; i < want.size(); ++i) {
        const double d = std::fabs(static_cast<double>((*got)[i]) - want[i]);
        differ += d != 0;
        most = std::max(most, d);
      }
      if (differ == 0) ++check.integer_exact;
      else if (from_float && most <= 1) ++check.integer_within_one;
      else if (check.first_difference.empty())
        check.first_difference = n.describe() + ": " + std::to_string(differ) + " of " + std::to_string(want.size()) +
                                 " elements differ, by at most " + std::to_string(static_cast<int64_t>(most));
    } else {
      ++check.float_values;
      check.float_max_rel_error =
          std::max(check.float_max_rel_error, measure::compare_output(*got, want).max_rel_error);
    }
    values.emplace(n.id, std::move(*got));  // what the kernels downstream read
    held.insert(n.id);
  }
  return check;
}

}  // namespace tessera::driver
