#include "ops/layout.h"

namespace tessera::ops {

int64_t choose_channel_block(int64_t channels, int64_t max_block) {
  int64_t bn = 1;
  while (bn * 2 <= max_block && channels % (bn * 2) == 0) bn *= 2;
  return bn;
}

namespace {
void check_block(const std::string& op, const std::string& block_name, int64_t bn, const std::string& channel_name,
                 int64_t channels) {
  check_positive(op, block_name, bn);
  if (channels % bn != 0)
    fail(op, channel_name + " (" + std::to_string(channels) + ") is not divisible by " + block_name + "=" +
                 std::to_string(bn));
}
}  // namespace

Shape nchwc_shape(const Shape& nchw, int64_t bn) {
  check_rank("pack_nchwc", "data (N, C, H, W)", nchw, 4);
  check_block("pack_nchwc", "ic_bn", bn, "channels", nchw[1]);
  return {nchw[0], nchw[1] / bn, nchw[2], nchw[3], bn};
}

Shape oihwio_shape(const Shape& oihw, int64_t ic_bn, int64_t oc_bn) {
  check_rank("pack_oihwio", "weight (O, I, KH, KW)", oihw, 4);
  check_block("pack_oihwio", "ic_bn", ic_bn, "input channels", oihw[1]);
  check_block("pack_oihwio", "oc_bn", oc_bn, "output channels", oihw[0]);
  return {oihw[0] / oc_bn, oihw[1] / ic_bn, oihw[2], oihw[3], ic_bn, oc_bn};
}

std::vector<float> pack_nchw_to_nchwc(const float* src, const Shape& s, int64_t bn) {
  Shape p = nchwc_shape(s, bn);
  std::vector<float> dst(num_elements(s));
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w) {
          int64_t outer = c / bn, inner = c % bn;
          dst[(((n * p[1] + outer) * p[2] + h) * p[3] + w) * bn + inner] = src[((n * s[1] + c) * s[2] + h) * s[3] + w];
        }
  return dst;
}

std::vector<float> unpack_nchwc_to_nchw(const float* src, const Shape& p) {
  check_rank("unpack_nchwc", "data (N, C/bn, H, W, bn)", p, 5);
  const int64_t bn = p[4], channels = p[1] * bn;
  std::vector<float> dst(num_elements(p));
  for (int64_t n = 0; n < p[0]; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t h = 0; h < p[2]; ++h)
        for (int64_t w = 0; w < p[3]; ++w)
          dst[((n * channels + c) * p[2] + h) * p[3] + w] =
              src[(((n * p[1] + c / bn) * p[2] + h) * p[3] + w) * bn + c % bn];
  return dst;
}

std::vector<float> pack_oihw_to_oihwio(const float* src, const Shape& s, int64_t ic_bn, int64_t oc_bn) {
  Shape p = oihwio_shape(s, ic_bn, oc_bn);
  std::vector<float> dst(num_elements(s));
  for (int64_t o = 0; o < s[0]; ++o)
    for (int64_t i = 0; i < s[1]; ++i)
      for (int64_t kh = 0; kh < s[2]; ++kh)
        for (int64_t kw = 0; kw < s[3]; ++kw) {
          int64_t packed = ((((o / oc_bn * p[1] + i / ic_bn) * p[2] + kh) * p[3] + kw) * ic_bn + i % ic_bn) * oc_bn +
                           o % oc_bn;
          dst[packed] = src[((o * s[1] + i) * s[2] + kh) * s[3] + kw];
        }
  return dst;
}

std::vector<float> nchw_to_nhwc(const float* src, const Shape& s) {
  check_rank("nchw_to_nhwc", "data (N, C, H, W)", s, 4);
  std::vector<float> dst(num_elements(s));
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w)
          dst[((n * s[2] + h) * s[3] + w) * s[1] + c] = src[((n * s[1] + c) * s[2] + h) * s[3] + w];
  return dst;
}

std::vector<float> nhwc_to_nchw(const float* src, const Shape& s) {
  check_rank("nhwc_to_nchw", "data (N, H, W, C)", s, 4);
  std::vector<float> dst(num_elements(s));
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t h = 0; h < s[1]; ++h)
      for (int64_t w = 0; w < s[2]; ++w)
        for (int64_t c = 0; c < s[3]; ++c)
          dst[((n * s[3] + c) * s[1] + h) * s[2] + w] = src[((n * s[1] + h) * s[2] + w) * s[3] + c];
  return dst;
}

std::vector<float> oihw_to_hwio(const float* src, const Shape& s) {
  check_rank("oihw_to_hwio", "weight (O, I, KH, KW)", s, 4);
  std::vector<float> dst(num_elements(s));
  for (int64_t o = 0; o < s[0]; ++o)
    for (int64_t i = 0; i < s[1]; ++i)
      for (int64_t kh = 0; kh < s[2]; ++kh)
        for (int64_t kw = 0; kw < s[3]; ++kw)
          dst[((kh * s[3] + kw) * s[1] + i) * s[0] + o] = src[((o * s[1] + i) * s[2] + kh) * s[3] + kw];
  return dst;
}

}  // namespace tessera::ops
