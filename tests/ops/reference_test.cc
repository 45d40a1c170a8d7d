// The references checked against each other and against hand-computed values:
// each formulation is written independently, so agreement means each is right.
#include <gtest/gtest.h>

#include <numeric>

#include "ops/layout.h"
#include "ops/reference.h"
#include "ops_test_util.h"

namespace tessera::ops {
namespace {

using test::max_relative_error;
using test::random_data;

struct ConvCase {
  Shape data, weight;  // NCHW, OIHW
  Conv2dAttrs attrs;
};

Conv2dAttrs asymmetric(int64_t stride, int64_t top, int64_t left, int64_t bottom, int64_t right, int64_t dilation) {
  Conv2dAttrs a = Conv2dAttrs::symmetric(stride, 0, dilation);
  a.pad_top = top, a.pad_left = left, a.pad_bottom = bottom, a.pad_right = right;
  return a;
}

std::vector<ConvCase> conv_cases() {
  return {
      {{1, 3, 7, 7}, {4, 3, 3, 3}, Conv2dAttrs::symmetric(1, 1)},
      {{2, 4, 13, 11}, {8, 4, 3, 3}, Conv2dAttrs::symmetric(2, 1)},
      {{1, 8, 9, 9}, {6, 8, 1, 1}, Conv2dAttrs::symmetric(1, 0)},
      {{1, 2, 17, 13}, {4, 2, 3, 5}, asymmetric(2, 0, 2, 1, 1, 1)},
      {{1, 4, 12, 12}, {2, 4, 3, 3}, Conv2dAttrs::symmetric(1, 2, 2)},
  };
}

// conv2d as a matrix product: rows are output pixels, columns (c, kh, kw) taps.
std::vector<float> conv2d_by_im2col(const std::vector<float>& x, const std::vector<float>& w, const ConvCase& cc) {
  const Shape &ds = cc.data, &ws = cc.weight;
  const Conv2dAttrs& a = cc.attrs;
  Shape os = conv2d_nchw_output_shape(ds, ws, a);
  const int64_t taps = ws[1] * ws[2] * ws[3], pixels = os[2] * os[3];
  std::vector<float> out(num_elements(os));
  for (int64_t n = 0; n < ds[0]; ++n) {
    std::vector<float> cols(pixels * taps, 0.0f);
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t t = 0; t < taps; ++t) {
        int64_t c = t / (ws[2] * ws[3]), kh = t / ws[3] % ws[2], kw = t % ws[3];
        int64_t h = p / os[3] * a.stride_h - a.pad_top + kh * a.dilation_h;
        int64_t wi = p % os[3] * a.stride_w - a.pad_left + kw * a.dilation_w;
        if (h >= 0 && h < ds[2] && wi >= 0 && wi < ds[3])
          cols[p * taps + t] = x[((n * ds[1] + c) * ds[2] + h) * ds[3] + wi];
      }
    std::vector<float> product(pixels * ws[0]);  // (pixels, O); OIHW weight is already (O, taps)
    reference::dense(cols.data(), w.data(), pixels, ws[0], taps, product.data());
    for (int64_t o = 0; o < ws[0]; ++o)
      for (int64_t p = 0; p < pixels; ++p) out[(n * ws[0] + o) * pixels + p] = product[p * ws[0] + o];
  }
  return out;
}

TEST(OpsReference, ConvLayoutsAndIm2colAgree) {
  for (const auto& cc : conv_cases()) {
    SCOPED_TRACE(shape_to_string(cc.data) + " * " + shape_to_string(cc.weight));
    auto x = random_data(num_elements(cc.data), 1);
    auto w = random_data(num_elements(cc.weight), 2);
    Shape os = conv2d_nchw_output_shape(cc.data, cc.weight, cc.attrs);
    std::vector<float> nchw(num_elements(os));
    reference::conv2d_nchw(x.data(), cc.data, w.data(), cc.weight, cc.attrs, nchw.data());

    // NHWC on transposed data.
    const Shape& d = cc.data;
    const Shape& k = cc.weight;
    std::vector<float> nhwc(nchw.size());
    reference::conv2d_nhwc(nchw_to_nhwc(x.data(), d).data(), {d[0], d[2], d[3], d[1]},
                           oihw_to_hwio(w.data(), k).data(), {k[2], k[3], k[1], k[0]}, cc.attrs, nhwc.data());
    EXPECT_LT(max_relative_error(nhwc_to_nchw(nhwc.data(), {os[0], os[2], os[3], os[1]}), nchw), 1e-6);

    // NCHWc on packed data, for every block pair that divides the channels.
    for (int64_t ic_bn : {1, 2, 4})
      for (int64_t oc_bn : {1, 2, 4}) {
        if (d[1] % ic_bn || k[0] % oc_bn) continue;
        std::vector<float> packed_out(nchw.size());
        reference::conv2d_nchwc(pack_nchw_to_nchwc(x.data(), d, ic_bn).data(), nchwc_shape(d, ic_bn),
                                pack_oihw_to_oihwio(w.data(), k, ic_bn, oc_bn).data(),
                                oihwio_shape(k, ic_bn, oc_bn), cc.attrs, packed_out.data());
        auto unpacked = unpack_nchwc_to_nchw(packed_out.data(), {os[0], os[1] / oc_bn, os[2], os[3], oc_bn});
        EXPECT_LT(max_relative_error(unpacked, nchw), 1e-6) << "ic_bn=" << ic_bn << " oc_bn=" << oc_bn;
      }

    EXPECT_LT(max_relative_error(conv2d_by_im2col(x, w, cc), nchw), 1e-5);
  }
}

// The blocked reference of a grouped convolution (each output chunk reading
// its group's input chunks) equals the grouped NCHW reference on packed data,
// for every pair of blocks that divides a group's channels.
TEST(OpsReference, GroupedNchwcEqualsGroupedNchw) {
  struct GroupCase {
    Shape data, weight;
    int64_t groups, stride, pad;
  };
  for (const GroupCase& c : {GroupCase{{1, 8, 7, 6}, {12, 4, 3, 3}, 2, 1, 1}, GroupCase{{2, 12, 5, 5}, {6, 4, 3, 2}, 3, 2, 0},
                             GroupCase{{1, 16, 4, 4}, {8, 2, 1, 1}, 8, 1, 0}}) {
    SCOPED_TRACE(shape_to_string(c.data) + " * " + shape_to_string(c.weight) + " groups " + std::to_string(c.groups));
    Conv2dAttrs a = Conv2dAttrs::symmetric(c.stride, c.pad, 1, c.groups);
    auto x = random_data(num_elements(c.data), 3);
    auto w = random_data(num_elements(c.weight), 4);
    const int64_t oh = (c.data[2] + 2 * c.pad - c.weight[2]) / c.stride + 1;
    const int64_t ow = (c.data[3] + 2 * c.pad - c.weight[3]) / c.stride + 1;
    const Shape os = {c.data[0], c.weight[0], oh, ow};
    std::vector<float> nchw(num_elements(os));
    reference::conv2d_grouped_nchw(x.data(), c.data, w.data(), c.weight, a, c.groups, nchw.data());
    int compared = 0;
    for (int64_t ic_bn : {1, 2, 4})
      for (int64_t oc_bn : {1, 2, 3, 4}) {
        if (c.weight[1] % ic_bn || (c.weight[0] / c.groups) % oc_bn) continue;
        std::vector<float> packed_out(nchw.size());
        reference::conv2d_nchwc(pack_nchw_to_nchwc(x.data(), c.data, ic_bn).data(), nchwc_shape(c.data, ic_bn),
                                pack_oihw_to_oihwio(w.data(), c.weight, ic_bn, oc_bn).data(),
                                oihwio_shape(c.weight, ic_bn, oc_bn), a, packed_out.data());
        auto unpacked = unpack_nchwc_to_nchw(packed_out.data(), {os[0], os[1] / oc_bn, os[2], os[3], oc_bn});
        EXPECT_LT(max_relative_error(unpacked, nchw), 1e-6) << "ic_bn=" << ic_bn << " oc_bn=" << oc_bn;
        ++compared;
      }
    EXPECT_GE(compared, 2);  // one output channel per group in the last case: oc_bn 1 only
  }
}

TEST(OpsReference, ConvSmallCaseByHand) {
  // 1x1x3x3 input 1..9, 2x2 kernel of ones, no padding: sums of 2x2 windows.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 1, 1, 1}, out(4);
  reference::conv2d_nchw(x.data(), {1, 1, 3, 3}, w.data(), {1, 1, 2, 2}, Conv2dAttrs{}, out.data());
  EXPECT_EQ(out, (std::vector<float>{12, 16, 24, 28}));
  // Padding 1, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1).
  reference::conv2d_nchw(x.data(), {1, 1, 3, 3}, w.data(), {1, 1, 2, 2}, Conv2dAttrs::symmetric(2, 1), out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9}));
}

TEST(OpsReference, DepthwiseEqualsPerChannelConv) {
  const Shape data = {2, 3, 9, 7}, weight = {3, 2, 3, 3};  // multiplier 2
  for (const Conv2dAttrs& attrs : {Conv2dAttrs::symmetric(1, 1), Conv2dAttrs::symmetric(2, 0, 2)}) {
    auto x = random_data(num_elements(data), 3);
    auto w = random_data(num_elements(weight), 4);
    Shape os = depthwise_conv2d_nchw_output_shape(data, weight, attrs);
    std::vector<float> out(num_elements(os));
    reference::depthwise_conv2d_nchw(x.data(), data, w.data(), weight, attrs, out.data());
    const int64_t plane = data[2] * data[3], out_plane = os[2] * os[3], kernel = weight[2] * weight[3];
    for (int64_t n = 0; n < data[0]; ++n)
      for (int64_t c = 0; c < data[1]; ++c)
        for (int64_t m = 0; m < weight[1]; ++m) {
          // One input channel through one filter, as an ordinary convolution.
          std::vector<float> single(out_plane);
          reference::conv2d_nchw(x.data() + (n * data[1] + c) * plane, {1, 1, data[2], data[3]},
                                 w.data() + (c * weight[1] + m) * kernel, {1, 1, weight[2], weight[3]}, attrs,
                                 single.data());
          const float* got = out.data() + (n * os[1] + c * weight[1] + m) * out_plane;
          EXPECT_LT(max_relative_error(std::vector<float>(got, got + out_plane), single), 1e-6);
        }
  }
}

TEST(OpsReference, DenseEqualsBatchMatmulOfOneAndHandValues) {
  const int64_t m = 5, n = 7, k = 13;
  auto a = random_data(m * k, 5), b = random_data(n * k, 6);
  std::vector<float> dense(m * n), bmm(m * n);
  reference::dense(a.data(), b.data(), m, n, k, dense.data());
  reference::batch_matmul(a.data(), b.data(), 1, m, n, k, bmm.data());
  EXPECT_LT(max_relative_error(dense, bmm), 1e-7);

  std::vector<float> x = {1, 2, 3, 4}, w = {1, 0, 0, 1, 1, 1}, out(6);  // (2,2) x (3,2)^T
  reference::dense(x.data(), w.data(), 2, 3, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 3, 4, 7}));
}

TEST(OpsReference, BatchMatmulBatchesAreIndependent) {
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  auto a = random_data(batch * m * k, 8), b = random_data(batch * n * k, 9);
  std::vector<float> out(batch * m * n);
  reference::batch_matmul(a.data(), b.data(), batch, m, n, k, out.data());
  for (int64_t i = 0; i < batch; ++i) {
    std::vector<float> one(m * n);
    reference::dense(a.data() + i * m * k, b.data() + i * n * k, m, n, k, one.data());
    EXPECT_EQ(std::vector<float>(out.begin() + i * m * n, out.begin() + (i + 1) * m * n), one);
  }
}

TEST(OpsReference, PoolingByHand) {
  std::vector<float> x(16);
  std::iota(x.begin(), x.end(), 1.0f);  // 4x4: 1..16
  std::vector<float> out(4);
  reference::max_pool2d(x.data(), {1, 1, 4, 4}, Pool2dAttrs::symmetric(2, 2, 0), out.data());
  EXPECT_EQ(out, (std::vector<float>{6, 8, 14, 16}));
  reference::avg_pool2d(x.data(), {1, 1, 4, 4}, Pool2dAttrs::symmetric(2, 2, 0), out.data());
  EXPECT_EQ(out, (std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f}));

  // 3x3 windows, stride 3, padding 1 over 4x4: the top-left window holds 1,2,5,6.
  reference::avg_pool2d(x.data(), {1, 1, 4, 4}, Pool2dAttrs::symmetric(3, 3, 1, false), out.data());
  EXPECT_FLOAT_EQ(out[0], (1 + 2 + 5 + 6) / 4.0f);
  EXPECT_FLOAT_EQ(out[3], (11 + 12 + 15 + 16) / 4.0f);
  reference::avg_pool2d(x.data(), {1, 1, 4, 4}, Pool2dAttrs::symmetric(3, 3, 1, true), out.data());
  EXPECT_FLOAT_EQ(out[0], (1 + 2 + 5 + 6) / 9.0f);
  reference::max_pool2d(x.data(), {1, 1, 4, 4}, Pool2dAttrs::symmetric(3, 3, 1), out.data());
  EXPECT_EQ(out, (std::vector<float>{6, 8, 14, 16}));

  std::vector<float> g(2);
  std::vector<float> planes = {1, 2, 3, 4, -1, -1, -1, 7};  // (1, 2, 2, 2)
  reference::global_avg_pool2d(planes.data(), {1, 2, 2, 2}, g.data());
  EXPECT_EQ(g, (std::vector<float>{2.5f, 1.0f}));
}

TEST(OpsReference, MaxPoolWithNegativeInputsIgnoresPadding) {
  std::vector<float> x = {-5, -4, -3, -2};  // 2x2, all negative: padding must not win
  // 3x3 output; its corners see one element each.
  std::vector<float> full(9);
  reference::max_pool2d(x.data(), {1, 1, 2, 2}, Pool2dAttrs::symmetric(2, 1, 1), full.data());
  EXPECT_EQ(full, (std::vector<float>{-5, -4, -4, -3, -2, -2, -3, -2, -2}));
}

TEST(OpsReference, SoftmaxRowsSumToOneAndMatchFormula) {
  const Shape shape = {3, 2, 17};
  auto x = random_data(num_elements(shape), 10);
  std::vector<float> out(x.size());
  reference::softmax(x.data(), shape, out.data());
  for (int64_t r = 0; r < 6; ++r) {
    double total = 0, denom = 0;
    for (int64_t j = 0; j < 17; ++j) denom += std::exp(double(x[r * 17 + j]));
    for (int64_t j = 0; j < 17; ++j) {
      total += out[r * 17 + j];
      EXPECT_NEAR(out[r * 17 + j], std::exp(double(x[r * 17 + j])) / denom, 1e-6);
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  // Large inputs do not overflow.
  std::vector<float> big = {1000, 1000}, half(2);
  reference::softmax(big.data(), {1, 2}, half.data());
  EXPECT_EQ(half, (std::vector<float>{0.5f, 0.5f}));
}

TEST(OpsReference, ElementwiseAndBroadcastByHand) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30}, col = {100, 200}, out(6);
  reference::add(a.data(), {2, 3}, b.data(), {3}, out.data());
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  reference::add(a.data(), {2, 3}, col.data(), {2, 1}, out.data());
  EXPECT_EQ(out, (std::vector<float>{101, 102, 103, 204, 205, 206}));
  reference::multiply(col.data(), {2, 1}, b.data(), {1, 3}, out.data());  // outer product
  EXPECT_EQ(out, (std::vector<float>{1000, 2000, 3000, 2000, 4000, 6000}));
  reference::bias_add(a.data(), {2, 3}, col.data(), {0}, out.data());
  EXPECT_EQ(out, (std::vector<float>{101, 102, 103, 204, 205, 206}));

  std::vector<float> v = {-2, -0.5f, 0, 3, 7};
  reference::relu(v.data(), 5, out.data());
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 5), (std::vector<float>{0, 0, 0, 3, 7}));
  reference::clip(v.data(), 5, -1, 6, out.data());
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 5), (std::vector<float>{-1, -0.5f, 0, 3, 6}));
}

TEST(OpsReference, PackedBiasAddEqualsChannelBiasAdd) {
  const Shape nchw = {2, 8, 3, 5};
  const int64_t bn = 4;
  auto x = random_data(num_elements(nchw), 11), bias = random_data(8, 12);
  std::vector<float> expected(x.size()), packed_out(x.size());
  reference::bias_add(x.data(), nchw, bias.data(), {1}, expected.data());
  // A (C/bn, bn) bias has the same memory as the flat (C) one.
  reference::bias_add(pack_nchw_to_nchwc(x.data(), nchw, bn).data(), nchwc_shape(nchw, bn), bias.data(), {1, 4},
                      packed_out.data());
  EXPECT_EQ(unpack_nchwc_to_nchw(packed_out.data(), nchwc_shape(nchw, bn)), expected);
}

}  // namespace
}  // namespace tessera::ops
