#pragma once
// A small ResNet for the accelerator's tests (graph packing, --target vta).
#include <string>

#include "graph/builder.h"
#include "ops/conv2d.h"
#include "ops/pooling.h"

namespace tessera::testing {

// A stem, a max pooling, a residual block and a downsampling one (ResNet's
// shapes at 16 and 32 channels), a global average pooling and a classifier;
// `narrow` gives the second block 24 channels, which no 16-channel block divides.
inline graph::Graph small_resnet(bool narrow = false) {
  using namespace graph;
  GraphBuilder b;
  const NodeId x = b.input("data", {1, 3, 32, 32});
  auto conv = [&](NodeId in, int64_t in_ch, int64_t out, int64_t k, int64_t stride, const std::string& name,
                  bool relu) {
    NodeId c = b.conv2d(in, b.random_constant(name + ".w", {out, in_ch, k, k}, -0.25f, 0.25f),
                        ops::Conv2dAttrs::symmetric(stride, k / 2), name);
    c = b.add(c, b.random_constant(name + ".b", {out, 1, 1}, -0.3f, 0.3f), name + ".bias");
    return relu ? b.relu(c, name + ".relu") : c;
  };
  NodeId s = conv(x, 3, 16, 3, 1, "stem", true);
  ops::Pool2dAttrs pool;
  pool.kernel_h = pool.kernel_w = 3, pool.stride_h = pool.stride_w = 2;
  pool.pad_top = pool.pad_left = pool.pad_bottom = pool.pad_right = 1;
  s = b.max_pool2d(s, pool, "pool");
  NodeId y = conv(s, 16, 16, 3, 1, "block1.conv1", true);
  y = conv(y, 16, 16, 3, 1, "block1.conv2", false);
  s = b.relu(b.add(y, s, "block1.add"), "block1.relu");
  const int64_t wide = narrow ? 24 : 32;
  y = conv(s, 16, wide, 3, 2, "block2.conv1", true);
  y = conv(y, wide, wide, 3, 1, "block2.conv2", false);
  const NodeId shortcut = conv(s, 16, wide, 1, 2, "block2.downsample", false);
  s = b.relu(b.add(y, shortcut, "block2.add"), "block2.relu");
  const NodeId pooled = b.flatten(b.global_avg_pool2d(s, "NCHW", "avgpool"), 1, "flat");
  return b.finish({b.dense(pooled, b.random_constant("fc.w", {10, wide}, -0.3f, 0.3f), "fc")});
}

}  // namespace tessera::testing
