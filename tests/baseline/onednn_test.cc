// The oneDNN baseline computes what a naive loop computes: benchmarks against
// it are only meaningful if it solves the same problem.
#include "onednn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tessera/error.h"

namespace tessera::baseline {
namespace {

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

std::vector<float> naive_conv2d(const Conv2dParams& p, const std::vector<float>& in,
                                const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t oh = p.out_height(), ow = p.out_width();
  std::vector<float> out(p.batch * p.out_channels * oh * ow);
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t o = 0; o < p.out_channels; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = p.bias ? b[o] : 0.0;
          for (int64_t c = 0; c < p.in_channels; ++c)
            for (int64_t ky = 0; ky < p.kernel_h; ++ky)
              for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
                const int64_t iy = y * p.stride_h - p.pad_top + ky * p.dilation_h;
                const int64_t ix = x * p.stride_w - p.pad_left + kx * p.dilation_w;
                if (iy < 0 || iy >= p.height || ix < 0 || ix >= p.width) continue;
                acc += double(in[((n * p.in_channels + c) * p.height + iy) * p.width + ix]) *
                       w[((o * p.in_channels + c) * p.kernel_h + ky) * p.kernel_w + kx];
              }
          if (p.relu) acc = std::max(acc, 0.0);
          out[((n * p.out_channels + o) * oh + y) * ow + x] = float(acc);
        }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << "at element " << i;
}

void check_conv2d(const Conv2dParams& p) {
  auto in = random_values(p.batch * p.in_channels * p.height * p.width, 1);
  auto w = random_values(p.out_channels * p.in_channels * p.kernel_h * p.kernel_w, 2);
  auto b = random_values(p.out_channels, 3);
  OneDnnConv2d conv(p, in.data(), w.data(), p.bias ? b.data() : nullptr);
  conv.run();
  expect_close(conv.output(), naive_conv2d(p, in, w, b));
}

TEST(OneDnnConv2d, MatchesNaiveLoopFor3x3Pad1) {
  Conv2dParams p;
  p.in_channels = 16, p.height = 14, p.width = 14;
  p.out_channels = 32, p.kernel_h = 3, p.kernel_w = 3, p.set_padding(1);
  check_conv2d(p);
}

TEST(OneDnnConv2d, MatchesNaiveLoopWithStrideBiasAndRelu) {
  Conv2dParams p;
  p.batch = 2, p.in_channels = 3, p.height = 23, p.width = 19;
  p.out_channels = 8, p.kernel_h = 7, p.kernel_w = 7, p.stride_h = 2, p.stride_w = 2;
  p.set_padding(3), p.bias = true, p.relu = true;
  check_conv2d(p);
}

TEST(OneDnnConv2d, MatchesNaiveLoopWithDilation) {
  Conv2dParams p;
  p.in_channels = 8, p.height = 12, p.width = 12;
  p.out_channels = 8, p.kernel_h = 3, p.kernel_w = 3, p.set_padding(2);
  p.dilation_h = 2, p.dilation_w = 2;
  check_conv2d(p);
}

TEST(OneDnnConv2d, MatchesNaiveLoopWithAsymmetricPadding) {
  Conv2dParams p;
  p.in_channels = 4, p.height = 9, p.width = 10;
  p.out_channels = 8, p.kernel_h = 3, p.kernel_w = 2;
  p.pad_top = 0, p.pad_left = 1, p.pad_bottom = 2, p.pad_right = 0;
  check_conv2d(p);
}

TEST(OneDnnConv2d, SameResultWithOneAndTwoThreads) {
  Conv2dParams p;
  p.in_channels = 32, p.height = 14, p.width = 14;
  p.out_channels = 64, p.kernel_h = 3, p.kernel_w = 3, p.set_padding(1);
  for (int threads : {1, 2}) {
    set_threads(threads);
    EXPECT_EQ(max_threads(), threads);
    check_conv2d(p);
  }
}

TEST(OneDnnConv2d, ImpossibleShapeIsATesseraError) {
  Conv2dParams p;
  p.in_channels = 4, p.height = 2, p.width = 2;
  p.out_channels = 4, p.kernel_h = 5, p.kernel_w = 5;
  std::vector<float> data(1024);
  EXPECT_THROW(OneDnnConv2d(p, data.data(), data.data()), Error);
}

TEST(OneDnnDense, MatchesNaiveLoopWithBias) {
  DenseParams p;
  p.batch = 3, p.in_features = 37, p.out_features = 20, p.bias = true;
  auto in = random_values(p.batch * p.in_features, 4);
  auto w = random_values(p.out_features * p.in_features, 5);
  auto b = random_values(p.out_features, 6);
  std::vector<float> want(p.batch * p.out_features);
  for (int64_t m = 0; m < p.batch; ++m)
    for (int64_t n = 0; n < p.out_features; ++n) {
      double acc = b[n];
      for (int64_t k = 0; k < p.in_features; ++k)
        acc += double(in[m * p.in_features + k]) * w[n * p.in_features + k];
      want[m * p.out_features + n] = float(acc);
    }
  OneDnnDense dense(p, in.data(), w.data(), b.data());
  dense.run();
  expect_close(dense.output(), want);
}

TEST(OneDnnIsa, UnknownNameIsAnErrorNamingIt) {
  try {
    set_max_isa("avx1024");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "oneDNN ISA 'avx1024': expected avx512, avx2, avx or sse");
  }
}

TEST(OneDnnIsa, CappingAfterAPrimitiveExistsIsRefused) {
  // oneDNN fixes its ISA when it creates the first primitive.
  DenseParams p;
  p.in_features = 8, p.out_features = 8;
  std::vector<float> data(64);
  OneDnnDense dense(p, data.data(), data.data());
  EXPECT_THROW(set_max_isa("sse"), Error);
}

}  // namespace
}  // namespace tessera::baseline
