// Inception v3 as torchvision's inception_v3 at 299x299, without the auxiliary
// classifier (used only in training). Every convolution is a BasicConv2d:
// conv (no bias) + batch norm (epsilon 0.001) + ReLU, named "<p>.conv",
// "<p>.bn", "<p>.relu". Average pools count padding, as PyTorch's default.
#include "graph/zoo_blocks.h"

namespace tessera::graph::zoo {
namespace {

struct Inception {
  NetBuilder& net;

  NodeId basic(NodeId x, int64_t out, int64_t kh, int64_t kw, int64_t stride, int64_t pad_h, int64_t pad_w,
               const std::string& p) {
    ConvSpec s{.out_channels = out, .kh = kh, .kw = kw, .stride = stride, .pad_h = pad_h, .pad_w = pad_w};
    return net.relu(net.batch_norm(net.conv(x, s, p + ".conv"), p + ".bn", 1e-3), p + ".relu");
  }
  NodeId basic(NodeId x, int64_t out, int64_t kernel, const std::string& p, int64_t stride = 1, int64_t pad = 0) {
    return basic(x, out, kernel, kernel, stride, pad, pad, p);
  }
  // 1x7 and 7x1 (or 1x3, 3x1) factorised convolutions keep the spatial size.
  NodeId row(NodeId x, int64_t out, int64_t k, const std::string& p) { return basic(x, out, 1, k, 1, 0, k / 2, p); }
  NodeId column(NodeId x, int64_t out, int64_t k, const std::string& p) { return basic(x, out, k, 1, 1, k / 2, 0, p); }

  NodeId a(NodeId x, int64_t pool_features, const std::string& p) {
    NodeId b1 = basic(x, 64, 1, p + ".branch1x1");
    NodeId b5 = basic(basic(x, 48, 1, p + ".branch5x5_1"), 64, 5, p + ".branch5x5_2", 1, 2);
    NodeId b3 = basic(x, 64, 1, p + ".branch3x3dbl_1");
    b3 = basic(basic(b3, 96, 3, p + ".branch3x3dbl_2", 1, 1), 96, 3, p + ".branch3x3dbl_3", 1, 1);
    NodeId bp = basic(net.avg_pool(x, 3, 1, 1, p + ".avg_pool"), pool_features, 1, p + ".branch_pool");
    return net.concat({b1, b5, b3, bp}, p + ".cat");
  }

  NodeId b(NodeId x, const std::string& p) {
    NodeId b3 = basic(x, 384, 3, p + ".branch3x3", 2);
    NodeId bd = basic(x, 64, 1, p + ".branch3x3dbl_1");
    bd = basic(basic(bd, 96, 3, p + ".branch3x3dbl_2", 1, 1), 96, 3, p + ".branch3x3dbl_3", 2);
    NodeId bp = net.max_pool(x, 3, 2, 0, p + ".max_pool");
    return net.concat({b3, bd, bp}, p + ".cat");
  }

  NodeId c(NodeId x, int64_t c7, const std::string& p) {
    NodeId b1 = basic(x, 192, 1, p + ".branch1x1");
    NodeId b7 = basic(x, c7, 1, p + ".branch7x7_1");
    b7 = column(row(b7, c7, 7, p + ".branch7x7_2"), 192, 7, p + ".branch7x7_3");
    NodeId bd = basic(x, c7, 1, p + ".branch7x7dbl_1");
    bd = row(column(bd, c7, 7, p + ".branch7x7dbl_2"), c7, 7, p + ".branch7x7dbl_3");
    bd = row(column(bd, c7, 7, p + ".branch7x7dbl_4"), 192, 7, p + ".branch7x7dbl_5");
    NodeId bp = basic(net.avg_pool(x, 3, 1, 1, p + ".avg_pool"), 192, 1, p + ".branch_pool");
    return net.concat({b1, b7, bd, bp}, p + ".cat");
  }

  NodeId d(NodeId x, const std::string& p) {
    NodeId b3 = basic(basic(x, 192, 1, p + ".branch3x3_1"), 320, 3, p + ".branch3x3_2", 2);
    NodeId b7 = basic(x, 192, 1, p + ".branch7x7x3_1");
    b7 = column(row(b7, 192, 7, p + ".branch7x7x3_2"), 192, 7, p + ".branch7x7x3_3");
    b7 = basic(b7, 192, 3, p + ".branch7x7x3_4", 2);
    NodeId bp = net.max_pool(x, 3, 2, 0, p + ".max_pool");
    return net.concat({b3, b7, bp}, p + ".cat");
  }

  NodeId e(NodeId x, const std::string& p) {
    NodeId b1 = basic(x, 320, 1, p + ".branch1x1");
    NodeId b3 = basic(x, 384, 1, p + ".branch3x3_1");
    b3 = net.concat({row(b3, 384, 3, p + ".branch3x3_2a"), column(b3, 384, 3, p + ".branch3x3_2b")},
                    p + ".branch3x3.cat");
    NodeId bd = basic(basic(x, 448, 1, p + ".branch3x3dbl_1"), 384, 3, p + ".branch3x3dbl_2", 1, 1);
    bd = net.concat({row(bd, 384, 3, p + ".branch3x3dbl_3a"), column(bd, 384, 3, p + ".branch3x3dbl_3b")},
                    p + ".branch3x3dbl.cat");
    NodeId bp = basic(net.avg_pool(x, 3, 1, 1, p + ".avg_pool"), 192, 1, p + ".branch_pool");
    return net.concat({b1, b3, bd, bp}, p + ".cat");
  }
};

}  // namespace

Graph inception_v3(int64_t batch, const std::string& layout) {
  NetBuilder net(layout, kSeed);
  Inception in{net};
  NodeId x = net.input(batch, 3, 299, 299);
  x = in.basic(x, 32, 3, "Conv2d_1a_3x3", 2);
  x = in.basic(x, 32, 3, "Conv2d_2a_3x3");
  x = in.basic(x, 64, 3, "Conv2d_2b_3x3", 1, 1);
  x = net.max_pool(x, 3, 2, 0, "maxpool1");
  x = in.basic(x, 80, 1, "Conv2d_3b_1x1");
  x = in.basic(x, 192, 3, "Conv2d_4a_3x3");
  x = net.max_pool(x, 3, 2, 0, "maxpool2");
  x = in.a(x, 32, "Mixed_5b");
  x = in.a(x, 64, "Mixed_5c");
  x = in.a(x, 64, "Mixed_5d");
  x = in.b(x, "Mixed_6a");
  x = in.c(x, 128, "Mixed_6b");
  x = in.c(x, 160, "Mixed_6c");
  x = in.c(x, 160, "Mixed_6d");
  x = in.c(x, 192, "Mixed_6e");
  x = in.d(x, "Mixed_7a");
  x = in.e(x, "Mixed_7b");
  x = in.e(x, "Mixed_7c");
  x = net.global_avg_pool(x, "avgpool");
  x = net.flatten(net.dropout(x, 0.5, "dropout"), "flatten");
  return net.finish(net.linear(x, 1000, "fc"));
}

}  // namespace tessera::graph::zoo
