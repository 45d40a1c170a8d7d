#include "graph/merged_groups.h"

#include "tessera/error.h"

namespace tessera::graph {

int64_t groups_to_merge(int64_t groups, int64_t group_in, int64_t group_out, int64_t block) {
  if (groups <= 1 || group_in != group_out || group_in <= 0 || group_in >= block || block % group_in != 0) return 1;
  const int64_t k = block / group_in;
  return groups % k == 0 ? k : 1;
}

runtime::NDArray merge_groups(const runtime::NDArray& weight, const std::string& kernel_layout, int64_t groups,
                              int64_t k) {
  const bool oihw = kernel_layout == "OIHW";
  if ((!oihw && kernel_layout != "HWIO") || weight.shape().size() != 4)
    throw Error("merge_groups: expects an OIHW or HWIO weight, got " + kernel_layout + " " +
                runtime::shape_text(weight.shape()));
  const auto& s = weight.shape();
  const int64_t outputs = oihw ? s[0] : s[3], group_in = oihw ? s[1] : s[2];
  const int64_t taps = oihw ? s[2] * s[3] : s[0] * s[1];
  if (k < 1 || groups % k != 0 || outputs % groups != 0)
    throw Error("merge_groups: " + std::to_string(groups) + " groups of weight " + runtime::shape_text(s) +
                " do not merge " + std::to_string(k) + " at a time");
  const int64_t group_out = outputs / groups, merged_in = k * group_in;
  std::vector<int64_t> shape = s;
  shape[oihw ? 1 : 2] = merged_in;
  runtime::NDArray merged(shape);  // zero-filled: the weights between merged groups
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t first = (o / group_out) % k * group_in;  // its group's inputs within the merged group
    for (int64_t i = 0; i < group_in; ++i)
      for (int64_t t = 0; t < taps; ++t) {
        if (oihw) {
          merged[(o * merged_in + first + i) * taps + t] = weight[(o * group_in + i) * taps + t];
        } else {
          merged[(t * merged_in + first + i) * outputs + o] = weight[(t * group_in + i) * outputs + o];
        }
      }
  }
  return merged;
}

}  // namespace tessera::graph
