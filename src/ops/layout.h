#pragma once
// Data-layout conversions on plain float arrays (row-major), used by the CLI to
// feed NHWC / NCHWc kernels and by tests to compare layouts:
//   NCHW  <-> NCHW[x]c      (N, C/bn, H, W, bn), channel c = outer*bn + inner
//   OIHW   -> OIHW[x]i[y]o  (O/oc_bn, I/ic_bn, KH, KW, ic_bn, oc_bn)
//   NCHW  <-> NHWC,  OIHW -> HWIO
#include <vector>

#include "ops/common.h"

namespace tessera::ops {

// The largest power of two up to `max_block` that divides `channels`.
// max_block: the target's fp32 vector lanes, so a block fills one register.
int64_t choose_channel_block(int64_t channels, int64_t max_block = 16);

Shape nchwc_shape(const Shape& nchw, int64_t bn);
Shape oihwio_shape(const Shape& oihw, int64_t ic_bn, int64_t oc_bn);

// Throw tessera::Error when a block does not divide its channel count.
std::vector<float> pack_nchw_to_nchwc(const float* nchw, const Shape& shape, int64_t bn);
std::vector<float> unpack_nchwc_to_nchw(const float* nchwc, const Shape& packed_shape);
std::vector<float> pack_oihw_to_oihwio(const float* oihw, const Shape& shape, int64_t ic_bn, int64_t oc_bn);

std::vector<float> nchw_to_nhwc(const float* nchw, const Shape& shape);
std::vector<float> nhwc_to_nchw(const float* nhwc, const Shape& nhwc_shape);
std::vector<float> oihw_to_hwio(const float* oihw, const Shape& shape);

}  // namespace tessera::ops
