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

}  // namespace tessera::graph
