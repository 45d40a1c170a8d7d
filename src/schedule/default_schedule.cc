#include "schedule/default_schedule.h"

#include "schedule/iter_names.h"

namespace tessera::schedule {

namespace {
bool is_output(const ir::ComputeDAG& dag, const ir::Tensor& t) {
  for (const auto& o : dag.outputs())
    if (o == t) return true;
  return false;
}
}  // namespace

Trace default_schedule(const ir::ComputeDAG& dag) {
  Trace trace;
  for (const auto& t : dag.tensors()) {
    if (t->is_placeholder()) continue;
    if (!t->is_reduction() && !is_output(dag, t)) {
      trace.compute_inline(t->name);
      continue;
    }
    std::vector<std::string> axes;
    for (const auto& a : t->axes) axes.push_back(a.var.name());
    if (axes.empty()) continue;
    std::string last = axes.back();
    if (!t->is_reduction() && t->axes.back().extent == 8) {
      trace.vectorize(t->name, last);  // an NCHW8c block, say
    } else if (!t->is_reduction() && t->axes.back().extent % 8 == 0) {
      trace.split(t->name, last, {8});
      trace.vectorize(t->name, split_part(last, 1));
    }
    if (axes.size() >= 2) {
      std::vector<std::string> outer(axes.begin(), axes.end() - 1);
      trace.fuse(t->name, outer);
      trace.parallel(t->name, fused_name(outer));
    }
  }
  return trace;
}

}  // namespace tessera::schedule
