#include "graph/channel_constant.h"

namespace tessera::graph {

std::optional<std::vector<float>> channel_values(const Node& constant, size_t rank, size_t axis, int64_t channels) {
  if (constant.op != Op::kConstant || !constant.value) return std::nullopt;
  const Shape& s = constant.type.shape;
  if (s.size() > rank) return std::nullopt;
  const size_t offset = rank - s.size();  // missing leading axes broadcast
  bool has_channel_axis = false;
  for (size_t d = 0; d < s.size(); ++d) {
    if (d + offset == axis) {
      if (s[d] != channels && s[d] != 1) return std::nullopt;
      has_channel_axis = s[d] == channels;
    } else if (s[d] != 1) {
      return std::nullopt;
    }
  }
  const runtime::NDArray& v = *constant.value;
  std::vector<float> values(channels);
  for (int64_t c = 0; c < channels; ++c) values[c] = v[has_channel_axis ? c : 0];
  return values;
}

runtime::NDArray channel_constant(const std::vector<float>& values, size_t rank, size_t axis) {
  Shape shape = {static_cast<int64_t>(values.size())};
  for (size_t d = axis + 1; d < rank; ++d) shape.push_back(1);
  runtime::NDArray a(shape);
  for (size_t c = 0; c < values.size(); ++c) a[c] = values[c];
  return a;
}

}  // namespace tessera::graph
