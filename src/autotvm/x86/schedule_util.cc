#include "autotvm/x86/schedule_util.h"

#include <algorithm>

#include "ops/layout.h"
#include "tessera/error.h"

namespace tessera::autotvm::x86 {

int64_t channel_block(int64_t channels, const target::Target& target) {
  return ops::choose_channel_block(channels, target.vector_lanes());
}

std::vector<int64_t> divisors_up_to(int64_t n, int64_t limit) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= std::min(n, limit); ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

}  // namespace tessera::autotvm::x86
