#include "autotvm/x86/schedule_util.h"

#include <algorithm>

#include "ops/layout.h"
#include "tessera/error.h"

namespace tessera::autotvm::x86 {

int64_t channel_block(int64_t channels, const codegen::Target& target) {
  return ops::choose_channel_block(channels, target.vector_lanes());
}

std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= std::min(n, limit); ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

std::vector<int64_t> split_lengths(const schedule::Trace& trace, const std::string& stage, const std::string& iter) {
  for (const auto& step : trace.steps())
    if (auto* s = std::get_if<schedule::SplitStep>(&step); s && s->stage == stage && s->iter == iter) return s->lengths;
  throw Error("schedule has no split of " + stage + "." + iter);
}

}  // namespace tessera::autotvm::x86
