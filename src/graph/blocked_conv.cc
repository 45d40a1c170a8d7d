#include "graph/blocked_conv.h"

#include "graph/layout.h"
#include "tessera/error.h"

namespace tessera::graph {

bool is_blocked_conv(const Conv2dAttrs& a) {
  return a.data_layout.size() > 5 && a.data_layout.rfind("NCHW", 0) == 0 && a.kernel_layout.rfind("OIHW", 0) == 0 &&
         a.kernel_layout.size() > 4;
}

Conv2dAttrs unblocked_attrs(const Conv2dAttrs& a) {
  Conv2dAttrs u = a;
  u.data_layout = "NCHW";
  u.kernel_layout = "OIHW";
  return u;
}

std::string blocked_output_layout(const Conv2dAttrs& a) {
  const int64_t ob = Layout::parse(a.kernel_layout).block_of('O');
  return "NCHW" + std::to_string(ob) + "c";
}

int64_t winograd_tile_for(const Conv2dAttrs& a, const Shape& w, const Shape& out) {
  const bool three_by_three = w.size() == 4 && w[2] == 3 && w[3] == 3;
  const bool unit_steps = a.stride_h == 1 && a.stride_w == 1 && a.dilation_h == 1 && a.dilation_w == 1;
  if (!three_by_three || !unit_steps || a.groups != 1 || out.size() < 4) return 0;
  if (w[0] < 16 || w[1] < 16 || out[2] < 6 || out[3] < 6) return 0;
  return 4;
}

}  // namespace tessera::graph
