#pragma once
// Injective operators that move or combine data without arithmetic, and the
// activation layout conversions a whole network needs between its kernels:
//   reshape / transpose / concat       tag "injective"
//   layout_transform                   tag "layout_transform"
//   sigmoid                            tag "elemwise"
// Layouts: "NCHW", "NHWC" and blocked "NCHW<b>c" (N, C/b, H, W, b), channel
// c = outer * b + inner.
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ops/common.h"

namespace tessera::ops {

// The attributes of the graph operators of this file.
struct ConcatAttrs {
  int64_t axis = 1;  // negative counts from the last axis
  std::string to_string() const { return "axis=" + std::to_string(axis); }
};
// ONNX Reshape semantics: 0 copies the input's extent at that position, one
// -1 is inferred from the element count.
struct ReshapeAttrs {
  Shape newshape;
  std::string to_string() const { return "newshape=" + shape_to_string(newshape); }
};
// (d0 * ... * d(axis-1), d(axis) * ... * d(rank-1)), as ONNX Flatten.
struct FlattenAttrs {
  int64_t axis = 1;
  std::string to_string() const { return "axis=" + std::to_string(axis); }
};
struct TransposeAttrs {
  std::vector<int64_t> perm;  // output axis i is input axis perm[i]; empty: reversed
  std::string to_string() const { return "perm=" + shape_to_string(perm); }
};
struct DropoutAttrs {
  double rate = 0.5;  // kept for printing and export; inference ignores it
  std::string to_string() const { return "rate=" + number_to_string(rate); }
};
// Activation layouts: "NCHW", "NHWC", or blocked ones like "NCHW8c" (channel
// c = outer * 8 + inner, with the inner block last).
struct LayoutTransformAttrs {
  std::string src, dst;
  std::string to_string() const { return "src=" + src + " dst=" + dst; }
};

// Row-major reinterpretation: the element count must not change.
ir::Tensor reshape(const ir::Tensor& data, const Shape& newshape);
// out axis i is data axis perm[i].
ir::Tensor transpose(const ir::Tensor& data, const std::vector<int64_t>& perm);
// Whether perm is 0, 1, ..., n-1 (a transpose that moves nothing).
bool is_identity_permutation(const std::vector<int64_t>& perm);
// Along `axis`; every other extent must agree.
ir::Tensor concat(const std::vector<ir::Tensor>& inputs, int64_t axis);
ir::Tensor sigmoid(const ir::Tensor& x);

// The block of "NCHW<b>c", 0 for "NCHW" and "NHWC"; throws for anything else.
int64_t layout_block(const std::string& layout);
// A 4-D activation's shape in `layout`, given its logical NCHW shape.
Shape shape_in_layout(const Shape& nchw, const std::string& layout);
ir::Tensor layout_transform(const ir::Tensor& data, const std::string& src, const std::string& dst);

}  // namespace tessera::ops
