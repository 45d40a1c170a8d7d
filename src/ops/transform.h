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

// Row-major reinterpretation: the element count must not change.
ir::Tensor reshape(const ir::Tensor& data, const Shape& newshape);
// out axis i is data axis perm[i].
ir::Tensor transpose(const ir::Tensor& data, const std::vector<int64_t>& perm);
// Along `axis`; every other extent must agree.
ir::Tensor concat(const std::vector<ir::Tensor>& inputs, int64_t axis);
ir::Tensor sigmoid(const ir::Tensor& x);

// The block of "NCHW<b>c", 0 for "NCHW" and "NHWC"; throws for anything else.
int64_t layout_block(const std::string& layout);
// A 4-D activation's shape in `layout`, given its logical NCHW shape.
Shape shape_in_layout(const Shape& nchw, const std::string& layout);
ir::Tensor layout_transform(const ir::Tensor& data, const std::string& src, const std::string& dst);

}  // namespace tessera::ops
