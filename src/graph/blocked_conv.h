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

}  // namespace tessera::graph
