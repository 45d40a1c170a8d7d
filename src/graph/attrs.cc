#include "graph/attrs.h"

#include <sstream>
#include <type_traits>

namespace tessera::graph {

Conv2dAttrs Conv2dAttrs::symmetric(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  Conv2dAttrs a;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  a.dilation_h = a.dilation_w = dilation;
  a.groups = groups;
  return a;
}

PoolAttrs PoolAttrs::symmetric(int64_t kernel, int64_t stride, int64_t pad) {
  PoolAttrs a;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = pad;
  return a;
}

namespace {

std::string list(const std::vector<int64_t>& values) { return ops::shape_to_string(values); }

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string to_string(const NoAttrs&) { return ""; }

std::string to_string(const Conv2dAttrs& a) {
  return "strides=" + list({a.stride_h, a.stride_w}) +
         " padding=" + list({a.pad_top, a.pad_left, a.pad_bottom, a.pad_right}) +
         " dilation=" + list({a.dilation_h, a.dilation_w}) + " groups=" + std::to_string(a.groups) +
         " data_layout=" + a.data_layout + " kernel_layout=" + a.kernel_layout +
         (a.winograd_tile ? " winograd_tile=" + std::to_string(a.winograd_tile) : "");
}

std::string to_string(const PoolAttrs& a) {
  std::string s = "pool_size=" + list({a.kernel_h, a.kernel_w}) + " strides=" + list({a.stride_h, a.stride_w}) +
                  " padding=" + list({a.pad_top, a.pad_left, a.pad_bottom, a.pad_right}) + " layout=" + a.layout;
  if (a.ceil_mode) s += " ceil_mode=1";
  if (a.count_include_pad) s += " count_include_pad=1";
  return s;
}

std::string to_string(const GlobalPoolAttrs& a) { return "layout=" + a.layout; }
std::string to_string(const BatchNormAttrs& a) {
  return "epsilon=" + number(a.epsilon) + " axis=" + std::to_string(a.axis);
}
std::string to_string(const BiasAddAttrs& a) { return "axis=" + std::to_string(a.axis); }
std::string to_string(const ClipAttrs& a) { return "min=" + number(a.min) + " max=" + number(a.max); }
std::string to_string(const ConcatAttrs& a) { return "axis=" + std::to_string(a.axis); }
std::string to_string(const ReshapeAttrs& a) { return "newshape=" + list(a.newshape); }
std::string to_string(const FlattenAttrs& a) { return "axis=" + std::to_string(a.axis); }
std::string to_string(const TransposeAttrs& a) { return "perm=" + list(a.perm); }
std::string to_string(const PadAttrs& a) {
  return "before=" + list(a.before) + " after=" + list(a.after) + " value=" + number(a.value);
}
std::string to_string(const SoftmaxAttrs& a) { return "axis=" + std::to_string(a.axis); }
std::string to_string(const DropoutAttrs& a) { return "rate=" + number(a.rate); }
std::string to_string(const LayoutTransformAttrs& a) { return "src=" + a.src + " dst=" + a.dst; }

}  // namespace

std::string attrs_to_string(const Attrs& attrs) {
  return std::visit([](const auto& a) { return to_string(a); }, attrs);
}

}  // namespace tessera::graph
