// Every operator of the registry, on several shapes (odd sizes, stride 2,
// padding), under non-trivial schedules: each must match its reference.
#include <gtest/gtest.h>

#include "ops/ops_cases.h"
#include "testing/check.h"

namespace tessera {
namespace {

using schedule::Trace;

struct Variant {
  std::string name;
  Trace trace;
};

std::vector<std::string> names(const std::vector<ir::IterVar>& axes) {
  std::vector<std::string> out;
  for (const auto& a : axes) out.push_back(a.var.name());
  return out;
}

// The stage that does the work: the last reduction, else the output.
ir::Tensor main_stage(const ir::ComputeDAG& dag) {
  ir::Tensor found = dag.outputs()[0];
  for (const auto& t : dag.tensors())
    if (!t->is_placeholder() && t->is_reduction()) found = t;
  return found;
}

// Inlines elementwise intermediates other than `keep`.
void inline_others(const ir::ComputeDAG& dag, const ir::Tensor& keep, Trace& t, bool keep_pad = false) {
  for (const auto& s : dag.tensors()) {
    if (s->is_placeholder() || s == keep || s == dag.outputs()[0] || s->is_reduction()) continue;
    if (keep_pad && s->tag == "pad") continue;
    t.compute_inline(s->name);
  }
}

Variant tiled_reordered(const ir::ComputeDAG& dag) {
  Trace t;
  ir::Tensor m = main_stage(dag);
  inline_others(dag, m, t);
  std::vector<std::string> outer, inner;
  for (const auto& a : m->axes) {
    const std::string n = a.var.name();
    if (a.extent > 1) {
      t.split(m->name, n, {3});  // 3 rarely divides: exercises the guards
      outer.push_back(n + ".0");
      inner.push_back(n + ".1");
    } else {
      outer.push_back(n);
    }
  }
  std::vector<std::string> order = outer;
  for (const auto& r : names(m->reduce_axes)) order.push_back(r);
  order.insert(order.end(), inner.begin(), inner.end());
  t.reorder(m->name, order);
  return {"tiled+reordered", t};
}

Variant vectorized_unrolled(const ir::ComputeDAG& dag) {
  Trace t;
  ir::Tensor m = main_stage(dag);
  inline_others(dag, m, t);
  auto axes = names(m->axes);
  const std::string last = axes.back();
  t.split(m->name, last, {8});
  std::vector<std::string> order;
  for (size_t i = 0; i + 1 < axes.size(); ++i) order.push_back(axes[i]);
  order.push_back(last + ".0");
  for (const auto& r : names(m->reduce_axes)) order.push_back(r);
  if (axes.size() >= 2 && m->axes[axes.size() - 2].extent <= 16) {
    // Move the second-to-last spatial axis inside the reduction and unroll it.
    std::string second = axes[axes.size() - 2];
    order.erase(std::find(order.begin(), order.end(), second));
    order.push_back(second);
    t.reorder(m->name, [&] { auto o = order; o.push_back(last + ".1"); return o; }());
    t.unroll(m->name, second);
  } else {
    order.push_back(last + ".1");
    t.reorder(m->name, order);
  }
  t.vectorize(m->name, last + ".1");
  return {"vectorized+unrolled", t};
}

Variant parallel(const ir::ComputeDAG& dag) {
  Trace t;
  ir::Tensor m = main_stage(dag);
  inline_others(dag, m, t);
  for (const auto& s : {m, dag.outputs()[0]}) {
    auto axes = names(s->axes);
    if (axes.size() >= 2) {
      std::vector<std::string> outer(axes.begin(), axes.end() - 1);
      t.fuse(s->name, outer);
      std::string fused;
      for (const auto& a : outer) fused += (fused.empty() ? "" : "@") + a;
      t.parallel(s->name, fused);
    } else {
      t.parallel(s->name, axes[0]);
    }
    t.pragma(s->name, axes.back(), "auto_unroll_max_step$16");
    if (s == dag.outputs()[0]) break;
  }
  return {"parallel", t};
}

// cache_write of the reduction, computed inside the output's loops, with the
// padding computed inside the reduction's first reduce loop.
Variant cache_write_compute_at(const ir::ComputeDAG& dag) {
  Trace t;
  ir::Tensor m = main_stage(dag);
  ir::Tensor out = dag.outputs()[0];
  inline_others(dag, m, t, /*keep_pad=*/true);
  std::string tile = m->name;
  if (m == out) {
    t.cache_write(m->name);
    tile = m->name + ".local";
  }
  auto out_axes = names(out->axes);
  t.compute_at(tile, out->name, out_axes[std::min<size_t>(1, out_axes.size() - 1)]);
  for (const auto& s : dag.tensors())
    if (s->tag == "pad") t.compute_at(s->name, tile, m->reduce_axes[0].var.name());
  return {"cache_write+compute_at", t};
}

class ScheduleVariants : public ::testing::TestWithParam<int> {};

TEST_P(ScheduleVariants, MatchReference) {
  auto c = ops::test::registry_cases()[GetParam()];
  ops::Workload w = ops::make_workload(c.op, c.args);
  std::vector<Variant> variants = {tiled_reordered(w.dag), vectorized_unrolled(w.dag), parallel(w.dag)};
  if (main_stage(w.dag)->is_reduction()) variants.push_back(cache_write_compute_at(w.dag));
  for (const auto& v : variants) {
    SCOPED_TRACE(w.op + " under " + v.name + ": " + v.trace.dump());
    auto r = testing::check_schedule(w, v.trace, 2);
    EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, ScheduleVariants,
                         ::testing::Range(0, static_cast<int>(ops::test::registry_cases().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           auto c = ops::test::registry_cases()[info.param];
                           return c.op + "_" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace tessera
