// Fuzzing the schedule files `tessera op --schedule` reads: 10,000 mutations
// of real schedules (fixed seed) go the CLI's way (parse, replay, lower, the
// codegen passes), and a sample of those accepted is compiled, run and
// compared with the reference. No input may crash the process; each
// rejection is a tessera::Error of one line.
#include <gtest/gtest.h>

#include <functional>

#include "ops/workloads.h"
#include "schedule/default_schedule.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"
#include "testing/check.h"
#include "testing/json_mutator.h"
#include "tir/lower.h"

namespace tessera {
namespace {

using nlohmann::json;

struct Seed {
  ops::Workload workload;
  schedule::Trace trace;
};

std::vector<Seed> seeds() {
  const schedule::VectorUnit avx2{.bits = 256, .registers = 16};
  std::vector<Seed> s;
  auto conv = ops::conv2d_nchwc_workload({1, 2, 6, 7, 8}, {2, 2, 3, 3, 8, 8}, ops::Conv2dAttrs::symmetric(1, 1),
                                         ops::Epilogue{true, true});
  s.push_back({conv, schedule::conv2d_nchwc_schedule(conv.dag, avx2)});
  auto pointwise = ops::conv2d_nchwc_workload({1, 2, 5, 5, 8}, {4, 2, 1, 1, 8, 8}, ops::Conv2dAttrs::symmetric(2, 0));
  s.push_back({pointwise, schedule::conv2d_nchwc_schedule(pointwise.dag, avx2)});
  auto dense = ops::dense_pack_workload({3, 24}, {4, 24, 8}, ops::Epilogue{true, false});
  s.push_back({dense, schedule::dense_pack_schedule(dense.dag, avx2)});
  auto softmax = ops::softmax_workload({4, 40});
  s.push_back({softmax, schedule::default_schedule(softmax.dag)});
  return s;
}

void collect_strings(const json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_array() || j.is_object())
    for (const auto& child : j) collect_strings(child, out);
}

// The error of `run`, "" when it succeeds. Anything but a tessera::Error
// fails the test: the CLI would print it as an internal error.
std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what()[0] ? e.what() : "(empty message)";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a tessera::Error: " << e.what();
    return "internal";
  }
  return "";
}

TEST(ScheduleFuzz, TenThousandMutatedSchedulesNeverCrashAndEachRejectionIsOneLine) {
  const std::vector<Seed> all = seeds();
  std::vector<std::string> names;
  for (const auto& s : all) collect_strings(s.trace.to_json(), names);
  testing::JsonMutator mutator(20261124, names);
  int accepted = 0, compiled = 0, rejected = 0;
  for (int i = 0; i < 10000; ++i) {
    const Seed& seed = all[i % all.size()];
    const std::string text = mutator.mutate(seed.trace.to_json());
    std::optional<tir::LoweredFunc> lowered;
    const std::string why = error_of([&] {
      schedule::Trace trace = schedule::Trace::parse(text);
      lowered = tir::prepare_for_codegen(tir::lower(seed.workload.dag, trace, "fuzz"));
      // Every 5th schedule that lowers (40 at most) is compiled and run: it
      // must compute what the reference does, or it should have been rejected.
      if (accepted++ % 5 == 0 && compiled < 40) {
        ++compiled;
        auto r = testing::check_schedule(seed.workload, trace, 2);
        EXPECT_LE(r.max_rel_error, 1e-4) << "schedule " << text << "\n" << r.lowered;
      }
    });
    if (why.empty()) continue;
    ++rejected;
    EXPECT_EQ(why.find('\n'), std::string::npos) << "case " << i << ": " << why;
    EXPECT_LE(why.size(), 1000u) << "case " << i << ": " << why.substr(0, 300);
  }
  EXPECT_EQ(accepted + rejected, 10000);
  EXPECT_GT(rejected, 1000);  // the mutations do hit the checks...
  EXPECT_GE(compiled, 20);    // ...and leave enough valid schedules to run
}

// The cases of the hardening issue, each a clear error.
TEST(ScheduleFuzz, HostileSchedulesFromTheIssueAreRejected) {
  const Seed seed = seeds()[0];
  const std::string stage = "conv2d_NCHWc";  // its n has extent 1
  auto rejects = [&](const std::string& text, const std::string& reason) {
    const std::string why = error_of([&] { tir::lower(seed.workload.dag, schedule::Trace::parse(text), "k"); });
    EXPECT_NE(why.find(reason), std::string::npos) << text.substr(0, 200) << "\n -> " << why;
  };
  rejects(R"([{"step":"split","stage":")" + stage + R"(","iter":"n","lengths":[4294967296,4294967296]}])", "overflows");
  rejects(R"([{"step":"annotate","stage":"conv2d_NCHWc","iter":"ic_outer","annotation":"parallel"}])",
          "a reduce iterator cannot run in parallel");
  rejects(std::string(100000, '[') + std::string(100000, ']'), "nested deeper than");
  json many = json::array();
  many.push_back({{"step", "split"}, {"stage", stage}, {"iter", "n"}, {"lengths", std::vector<int64_t>(100000, 1)}});
  rejects(many.dump(), "more than 4096 values");
  rejects(R"([{"step":"pragma","stage":")" + stage + R"(","iter":"n","pragma":"auto_unroll_max_step$1000000000"}])",
          "N must be from 0 to 4096");
  rejects(R"([{"step":"split","stage":")" + stage + R"(","iter":"n","lengths":[1e999]}])", "number out of range");
}

}  // namespace
}  // namespace tessera
