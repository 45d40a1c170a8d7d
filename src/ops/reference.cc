#include "ops/reference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ops/elementwise.h"

namespace tessera::ops::reference {

namespace {
// Row-major offset of a multi-index.
int64_t offset(const Shape& shape, std::initializer_list<int64_t> index) {
  int64_t off = 0;
  size_t d = 0;
  for (int64_t i : index) off = off * shape[d++] + i;
  return off;
}

bool inside(int64_t i, int64_t extent) { return i >= 0 && i < extent; }
}  // namespace

void conv2d_nchw(const float* data, const Shape& ds, const float* weight, const Shape& ws, const Conv2dAttrs& a,
                 float* out) {
  Shape os = conv2d_nchw_output_shape(ds, ws, a);
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t o = 0; o < os[1]; ++o)
      for (int64_t oh = 0; oh < os[2]; ++oh)
        for (int64_t ow = 0; ow < os[3]; ++ow) {
          double acc = 0;
          for (int64_t c = 0; c < ds[1]; ++c)
            for (int64_t kh = 0; kh < ws[2]; ++kh)
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
                int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
                if (inside(h, ds[2]) && inside(w, ds[3]))  // outside: zero padding
                  acc += double(data[offset(ds, {n, c, h, w})]) * weight[offset(ws, {o, c, kh, kw})];
              }
          out[offset(os, {n, o, oh, ow})] = float(acc);
        }
}

void conv2d_nhwc(const float* data, const Shape& ds, const float* weight, const Shape& ws, const Conv2dAttrs& a,
                 float* out) {
  Shape os = conv2d_nhwc_output_shape(ds, ws, a);
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t oh = 0; oh < os[1]; ++oh)
      for (int64_t ow = 0; ow < os[2]; ++ow)
        for (int64_t o = 0; o < os[3]; ++o) {
          double acc = 0;
          for (int64_t kh = 0; kh < ws[0]; ++kh)
            for (int64_t kw = 0; kw < ws[1]; ++kw)
              for (int64_t c = 0; c < ds[3]; ++c) {
                int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
                int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
                if (inside(h, ds[1]) && inside(w, ds[2]))
                  acc += double(data[offset(ds, {n, h, w, c})]) * weight[offset(ws, {kh, kw, c, o})];
              }
          out[offset(os, {n, oh, ow, o})] = float(acc);
        }
}

void conv2d_nchwc(const float* data, const Shape& ds, const float* weight, const Shape& ws, const Conv2dAttrs& a,
                  float* out) {
  Shape os = conv2d_nchwc_output_shape(ds, ws, a);
  const int64_t ic_bn = ds[4], oc_bn = ws[5];
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t oc_chunk = 0; oc_chunk < os[1]; ++oc_chunk)
      for (int64_t oh = 0; oh < os[2]; ++oh)
        for (int64_t ow = 0; ow < os[3]; ++ow)
          for (int64_t oc_block = 0; oc_block < oc_bn; ++oc_block) {
            double acc = 0;
            // Every input channel, addressed as (chunk, position in block).
            for (int64_t ic = 0; ic < ds[1] * ic_bn; ++ic)
              for (int64_t kh = 0; kh < ws[2]; ++kh)
                for (int64_t kw = 0; kw < ws[3]; ++kw) {
                  int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
                  int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
                  if (!inside(h, ds[2]) || !inside(w, ds[3])) continue;
                  acc += double(data[offset(ds, {n, ic / ic_bn, h, w, ic % ic_bn})]) *
                         weight[offset(ws, {oc_chunk, ic / ic_bn, kh, kw, ic % ic_bn, oc_block})];
                }
            out[offset(os, {n, oc_chunk, oh, ow, oc_block})] = float(acc);
          }
}

void depthwise_conv2d_nchw(const float* data, const Shape& ds, const float* weight, const Shape& ws,
                           const Conv2dAttrs& a, float* out) {
  Shape os = depthwise_conv2d_nchw_output_shape(ds, ws, a);
  const int64_t multiplier = ws[1];
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t c = 0; c < ds[1]; ++c)
      for (int64_t m = 0; m < multiplier; ++m)
        for (int64_t oh = 0; oh < os[2]; ++oh)
          for (int64_t ow = 0; ow < os[3]; ++ow) {
            double acc = 0;
            for (int64_t kh = 0; kh < ws[2]; ++kh)
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
                int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
                if (inside(h, ds[2]) && inside(w, ds[3]))
                  acc += double(data[offset(ds, {n, c, h, w})]) * weight[offset(ws, {c, m, kh, kw})];
              }
            out[offset(os, {n, c * multiplier + m, oh, ow})] = float(acc);
          }
}

void dense(const float* data, const float* weight, int64_t m, int64_t n, int64_t k, float* out) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t r = 0; r < k; ++r) acc += double(data[i * k + r]) * weight[j * k + r];
      out[i * n + j] = float(acc);
    }
}

void batch_matmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t n, int64_t k, float* out) {
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t r = 0; r < k; ++r) acc += double(a[(bi * m + i) * k + r]) * b[(bi * n + j) * k + r];
        out[(bi * m + i) * n + j] = float(acc);
      }
}

namespace {
// Visits every output window of a 2-D pooling: f(output offset, input plane, first
// row, first column) with window origin possibly negative (inside the padding).
void for_each_window(const Shape& ds, const Pool2dAttrs& a, const std::string& op,
                     const std::function<void(int64_t, int64_t, int64_t, int64_t)>& f) {
  Shape os = pool2d_output_shape(op, ds, a);
  for (int64_t plane = 0; plane < ds[0] * ds[1]; ++plane)
    for (int64_t oh = 0; oh < os[2]; ++oh)
      for (int64_t ow = 0; ow < os[3]; ++ow)
        f((plane * os[2] + oh) * os[3] + ow, plane, oh * a.stride_h - a.pad_top, ow * a.stride_w - a.pad_left);
}
}  // namespace

void max_pool2d(const float* data, const Shape& ds, const Pool2dAttrs& a, float* out) {
  const int64_t H = ds[2], W = ds[3];
  for_each_window(ds, a, "max_pool2d", [&](int64_t o, int64_t plane, int64_t h0, int64_t w0) {
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + a.kernel_h, H); ++h)
      for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w0 + a.kernel_w, W); ++w)
        best = std::max(best, data[(plane * H + h) * W + w]);
    out[o] = best;
  });
}

void avg_pool2d(const float* data, const Shape& ds, const Pool2dAttrs& a, float* out) {
  const int64_t H = ds[2], W = ds[3];
  for_each_window(ds, a, "avg_pool2d", [&](int64_t o, int64_t plane, int64_t h0, int64_t w0) {
    double total = 0;
    int64_t count = 0;
    for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + a.kernel_h, H); ++h)
      for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w0 + a.kernel_w, W); ++w) {
        total += data[(plane * H + h) * W + w];
        ++count;
      }
    // Padding contributes zeros to the sum; it only changes the divisor.
    out[o] = float(total / double(a.count_include_pad ? a.kernel_h * a.kernel_w : count));
  });
}

void global_avg_pool2d(const float* data, const Shape& ds, float* out) {
  check_rank("global_avg_pool2d", "data (N, C, H, W)", ds, 4);
  const int64_t plane_size = ds[2] * ds[3];
  for (int64_t plane = 0; plane < ds[0] * ds[1]; ++plane) {
    double total = 0;
    for (int64_t i = 0; i < plane_size; ++i) total += data[plane * plane_size + i];
    out[plane] = float(total / double(plane_size));
  }
}

void softmax(const float* data, const Shape& shape, float* out) {
  const int64_t row = shape.back(), rows = num_elements(shape) / row;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = data + r * row;
    // softmax(x) = exp(x - max) / sum(exp(x - max)); the shift changes nothing
    // mathematically and avoids overflow.
    double top = *std::max_element(x, x + row), total = 0;
    for (int64_t j = 0; j < row; ++j) total += std::exp(double(x[j]) - top);
    for (int64_t j = 0; j < row; ++j) out[r * row + j] = float(std::exp(double(x[j]) - top) / total);
  }
}

void bias_add(const float* x, const Shape& shape, const float* bias, const std::vector<size_t>& axes, float* out) {
  // Strides of each axis in x, to recover coordinates from a flat position.
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  for (int64_t i = 0; i < num_elements(shape); ++i) {
    int64_t b = 0;
    for (size_t axis : axes) b = b * shape[axis] + (i / stride[axis]) % shape[axis];
    out[i] = x[i] + bias[b];
  }
}

namespace {
void broadcast_binary(const float* a, const Shape& as, const float* b, const Shape& bs, float* out,
                      const std::function<float(float, float)>& f, const std::string& op) {
  Shape os = broadcast_shape(op, as, bs);
  const size_t rank = os.size();
  // Offset into an operand of the output coordinate `coord`, stretching size-1 dims.
  auto operand_offset = [&](const Shape& s, const std::vector<int64_t>& coord) {
    int64_t off = 0;
    for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : coord[rank - s.size() + d]);
    return off;
  };
  std::vector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < num_elements(os); ++i) {
    int64_t rest = i;
    for (size_t d = rank; d-- > 0;) {
      coord[d] = rest % os[d];
      rest /= os[d];
    }
    out[i] = f(a[operand_offset(as, coord)], b[operand_offset(bs, coord)]);
  }
}
}  // namespace

void add(const float* a, const Shape& as, const float* b, const Shape& bs, float* out) {
  broadcast_binary(a, as, b, bs, out, [](float x, float y) { return x + y; }, "add");
}

void multiply(const float* a, const Shape& as, const float* b, const Shape& bs, float* out) {
  broadcast_binary(a, as, b, bs, out, [](float x, float y) { return x * y; }, "multiply");
}

void relu(const float* x, int64_t size, float* out) {
  for (int64_t i = 0; i < size; ++i) out[i] = x[i] > 0 ? x[i] : 0.0f;
}

void clip(const float* x, int64_t size, float lo, float hi, float* out) {
  for (int64_t i = 0; i < size; ++i) out[i] = std::min(std::max(x[i], lo), hi);
}

}  // namespace tessera::ops::reference
