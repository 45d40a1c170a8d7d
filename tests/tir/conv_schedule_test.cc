#include <gtest/gtest.h>

#include "ops/workloads.h"
#include "schedule/default_schedule.h"
#include "schedule/manual_schedule.h"
#include "testing/check.h"
#include "tir/lower.h"
#include "tir/printer.h"

namespace tessera {
namespace {

ops::Workload small_nchwc(int64_t hw, int64_t stride, int64_t pad, ops::Epilogue e = {}) {
  ops::Conv2dAttrs a;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  return ops::conv2d_nchwc_workload({1, 2, hw, hw, 8}, {2, 2, 3, 3, 8, 16}, a, e);
}

TEST(TirConvSchedule, ManualNchwcScheduleMatchesReference) {
  auto w = small_nchwc(14, 1, 1);
  auto r = testing::check_schedule(w, schedule::best_manual_schedule(w.dag, {.bits = 256, .registers = 16}));
  EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
}

TEST(TirConvSchedule, ManualNchwcScheduleWithEpilogueOnWideVectors) {
  auto w = small_nchwc(9, 2, 1, ops::Epilogue{true, true});
  auto r = testing::check_schedule(w, schedule::best_manual_schedule(w.dag, {.bits = 512, .registers = 32}), 2);
  EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
}

TEST(TirDenseSchedule, ManualDensePackScheduleMatchesReference) {
  for (int64_t m : {1, 5}) {
    auto w = ops::dense_pack_workload({m, 37}, {6, 37, 8}, ops::Epilogue{true, false});
    auto r = testing::check_schedule(w, schedule::best_manual_schedule(w.dag, {.bits = 512, .registers = 32}), 2);
    EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
  }
}

}  // namespace
}  // namespace tessera
