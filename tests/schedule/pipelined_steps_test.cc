// pipelined_steps: every loop a shared fetch is computed at, annotated
// Pipeline once; nothing else changes.
#include "schedule/pipelined_steps.h"

#include <gtest/gtest.h>

#include "ops/registry.h"
#include "ops/workloads.h"
#include "schedule/gpu_schedule.h"

namespace tessera::schedule {
namespace {

std::vector<AnnotateStep> pipelines(const Trace& t) {
  std::vector<AnnotateStep> out;
  for (const Step& s : t.steps())
    if (const auto* a = std::get_if<AnnotateStep>(&s); a && a->annotation == Annotation::Pipeline) out.push_back(*a);
  return out;
}

TEST(PipelinedSteps, TheStepLoopOfEverySharedFetchIsPipelinedOnce) {
  // A dense: both operands fetched at the step of K, one loop pipelined.
  const ops::Workload dense = ops::dense_workload({64, 128}, {64, 128});
  const std::optional<Trace> t = gpu_matmul_schedule(dense.dag, 1024);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(pipelines(*t).empty());
  const Trace p = pipelined_steps(*t);
  ASSERT_EQ(pipelines(p).size(), 1u) << p.dump();
  EXPECT_EQ(pipelines(p)[0].iter, "k.0") << p.dump();
  EXPECT_EQ(p.steps().size(), t->steps().size() + 1);
  EXPECT_EQ(pipelines(pipelined_steps(p)).size(), 1u);  // already pipelined: unchanged
  p.replay(dense.dag);                                   // a valid schedule
  // A direct convolution's window and weights, at the step of its channels.
  const ops::Workload conv =
      ops::conv2d_nchw_workload({1, 16, 14, 14}, {32, 16, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1));
  const std::optional<Trace> c = gpu_conv2d_schedule(conv.dag, 1024, 48 * 1024);
  ASSERT_TRUE(c.has_value());
  const Trace pc = pipelined_steps(*c);
  ASSERT_EQ(pipelines(pc).size(), 1u) << pc.dump();
  pc.replay(conv.dag);
  // No shared fetch (an elementwise kernel's default schedule): nothing to pipeline.
  const ops::Workload relu = ops::make_workload("relu", [] {
    ops::OpArgs a;
    a.input = {4, 64};
    return a;
  }());
  const Trace r = best_gpu_schedule(relu.dag, GpuBlockLimits{});
  EXPECT_TRUE(pipelines(pipelined_steps(r)).empty());
}

}  // namespace
}  // namespace tessera::schedule
