#pragma once
// Grouped convolutions whose groups are narrower than a channel block
// (ResNeXt-50's 32 groups of 4 channels against blocks of 8) computed as
// fewer, wider groups: k neighbouring groups as one of k times the channels,
// its weight block-diagonal (each output keeps the weights of its own
// group's inputs and meets the other merged groups' inputs with zeros). The
// results are the same; the convolution then reads and writes the blocks its
// neighbours use, where narrow blocks would put a layout transform on either
// side of it, and runs whole vectors with a zero in every other lane pair of
// products rather than half vectors: at blocks of 8 the same number of
// vector products; at 16 (512 bits) groups of 4 take four times those of
// quarter vectors, which the transforms saved repay (ResNeXt-50 on Zen 4).
#include <cstdint>
#include <string>

#include "runtime/ndarray.h"

namespace tessera::graph {

// How many neighbouring groups to merge for channel blocks of `block`: block
// / channels where each group has `group_in` == `group_out` == channels,
// fewer than `block`, dividing it, and the groups divide into such merges;
// else 1 (groups as they are).
int64_t groups_to_merge(int64_t groups, int64_t group_in, int64_t group_out, int64_t block);

// `weight` (OIHW: O x I/groups x KH x KW, or HWIO: KH x KW x I/groups x O)
// of a convolution with `groups` groups as the weight of the same convolution
// in groups / k groups: its input axis k times as long, output o's weights at
// its own group's place in the merged group, zeros elsewhere.
runtime::NDArray merge_groups(const runtime::NDArray& weight, const std::string& kernel_layout, int64_t groups,
                              int64_t k);

}  // namespace tessera::graph
