#pragma once
// Convolutions in the blocked layouts convert_layout gives them: data
// NCHW<b>c, weight OIHW<i>i<o>o (O/o, I/i, KH, KW, i, o), output NCHW<o>c.
// Shape inference and the interpreter treat them as the same convolution in
// NCHW / OIHW with the layouts converted around it.
#include "graph/attrs.h"

namespace tessera::graph {

bool is_blocked_conv(const Conv2dAttrs& attrs);

// The attrs of the same convolution in NCHW / OIHW, and the output layout.
Conv2dAttrs unblocked_attrs(const Conv2dAttrs& attrs);
std::string blocked_output_layout(const Conv2dAttrs& attrs);

// The Winograd output tile convert_layout gives a convolution (0: direct):
// 4 for 3x3 stride-1 convolutions of one group with at least 16 input and
// output channels and an output of at least 6x6, where the transforms cost
// little against the 4x fewer multiplications. Measured on Zen 3 (AVX2, 1
// thread), F(4x4, 3x3) against the direct schedule on ResNet's 3x3 layers:
// 64ch 56x56 2.2x, 128ch 28x28 2.5x, 256ch 14x14 1.3x, 512ch 7x7 1.2x
// faster; F(2x2, 3x3) less so on all four.
int64_t winograd_tile_for(const Conv2dAttrs& attrs, const Shape& oihw_weight, const Shape& output);

}  // namespace tessera::graph
