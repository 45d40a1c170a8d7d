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

void depthwise_conv2d_nhwc(const float* data, const Shape& ds, const float* weight, const Shape& ws,
                           const Conv2dAttrs& a, float* out) {
  Shape os = depthwise_conv2d_nhwc_output_shape(ds, ws, a);
  const int64_t multiplier = ws[3] / ds[3];
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t oh = 0; oh < os[1]; ++oh)
      for (int64_t ow = 0; ow < os[2]; ++ow)
        for (int64_t o = 0; o < os[3]; ++o) {
          double acc = 0;
          for (int64_t kh = 0; kh < ws[0]; ++kh)
            for (int64_t kw = 0; kw < ws[1]; ++kw) {
              int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
              int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
              if (inside(h, ds[1]) && inside(w, ds[2]))
                acc += double(data[offset(ds, {n, h, w, o / multiplier})]) * weight[offset(ws, {kh, kw, 0, o})];
            }
          out[offset(os, {n, oh, ow, o})] = float(acc);
        }
}

void conv2d_nchwc(const float* data, const Shape& ds, const float* weight, const Shape& ws, const Conv2dAttrs& a,
                  float* out) {
  Shape os = conv2d_nchwc_output_shape(ds, ws, a);
  const int64_t ic_bn = ds[4], oc_bn = ws[5];
  // Per group: its output channels, and its input channels (all of them when ungrouped).
  const int64_t out_per_group = os[1] * oc_bn / a.groups, in_per_group = ws[1] * ic_bn;
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t oc_chunk = 0; oc_chunk < os[1]; ++oc_chunk)
      for (int64_t oh = 0; oh < os[2]; ++oh)
        for (int64_t ow = 0; ow < os[3]; ++ow)
          for (int64_t oc_block = 0; oc_block < oc_bn; ++oc_block) {
            const int64_t first_ic = (oc_chunk * oc_bn + oc_block) / out_per_group * in_per_group;
            double acc = 0;
            // The group's input channels; data addressed as (chunk, position in
            // block), the weight by the channel within the group.
            for (int64_t g_ic = 0; g_ic < in_per_group; ++g_ic)
              for (int64_t kh = 0; kh < ws[2]; ++kh)
                for (int64_t kw = 0; kw < ws[3]; ++kw) {
                  int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
                  int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
                  if (!inside(h, ds[2]) || !inside(w, ds[3])) continue;
                  const int64_t ic = first_ic + g_ic;
                  acc += double(data[offset(ds, {n, ic / ic_bn, h, w, ic % ic_bn})]) *
                         weight[offset(ws, {oc_chunk, g_ic / ic_bn, kh, kw, g_ic % ic_bn, oc_block})];
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

void broadcast_binary(const float* a, const Shape& as, const float* b, const Shape& bs, float* out,
                      const std::function<float(float, float)>& f, const std::string& op) {
  const Shape os = broadcast_shape(op, as, bs);
  std::vector<int64_t> coord;
  for (int64_t i = 0; i < num_elements(os); ++i) {
    unravel(i, os, coord);
    out[i] = f(a[broadcast_offset(as, coord)], b[broadcast_offset(bs, coord)]);
  }
}

void add(const float* a, const Shape& as, const float* b, const Shape& bs, float* out) {
  broadcast_binary(a, as, b, bs, out, [](float x, float y) { return x + y; }, "add");
}

void multiply(const float* a, const Shape& as, const float* b, const Shape& bs, float* out) {
  broadcast_binary(a, as, b, bs, out, [](float x, float y) { return x * y; }, "multiply");
}

void relu(const float* x, int64_t size, float* out) {
  for (int64_t i = 0; i < size; ++i) out[i] = x[i] < 0 ? 0.0f : x[i];  // NaN stays NaN
}

void clip(const float* x, int64_t size, float lo, float hi, float* out) {
  for (int64_t i = 0; i < size; ++i) out[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];  // NaN stays NaN
}

}  // namespace tessera::ops::reference

// --- Added for the graph interpreter (issue 9) ---
namespace tessera::ops::reference {

Shape conv2d_grouped_output_shape(const Shape& ds, const Shape& ws, const Conv2dAttrs& a, int64_t groups, bool nhwc) {
  const std::string op = "conv2d";
  check_rank(op, nhwc ? "data (N, H, W, C)" : "data (N, C, H, W)", ds, 4);
  check_rank(op, nhwc ? "weight (KH, KW, I, O)" : "weight (O, I, KH, KW)", ws, 4);
  check_dims_positive(op, "data", ds);
  check_dims_positive(op, "weight", ws);
  check_positive(op, "groups", groups);
  const int64_t c = nhwc ? ds[3] : ds[1], o = nhwc ? ws[3] : ws[0], i = nhwc ? ws[2] : ws[1];
  if (c % groups != 0 || o % groups != 0 || i * groups != c)
    fail(op, "weight " + shape_to_string(ws) + " does not fit data " + shape_to_string(ds) +
                 " with groups=" + std::to_string(groups));
  const int64_t h = nhwc ? ds[1] : ds[2], w = nhwc ? ds[2] : ds[3];
  auto [oh, ow] = spatial_output(op, h, w, nhwc ? ws[0] : ws[2], nhwc ? ws[1] : ws[3], a);
  return nhwc ? Shape{ds[0], oh, ow, o} : Shape{ds[0], o, oh, ow};
}

void conv2d_grouped_nchw(const float* data, const Shape& ds, const float* weight, const Shape& ws, const Conv2dAttrs& a,
                         int64_t groups, float* out) {
  const Shape os = conv2d_grouped_output_shape(ds, ws, a, groups, /*nhwc=*/false);
  const int64_t C = ds[1], H = ds[2], W = ds[3], O = ws[0], I = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = os[2], OW = os[3], out_per_group = O / groups;
  // Output columns whose input column (for kernel column kw) lies inside the
  // image form one range, found once so the innermost loop needs no test.
  std::vector<int64_t> ow_begin(KW, 0), ow_end(KW, 0);
  for (int64_t kw = 0; kw < KW; ++kw) {
    bool found = false;
    for (int64_t ow = 0; ow < OW; ++ow)
      if (inside(ow * a.stride_w - a.pad_left + kw * a.dilation_w, W)) {
        if (!found) ow_begin[kw] = ow;
        found = true;
        ow_end[kw] = ow + 1;
      }
  }
  // One output plane at a time, accumulated in double over (input channel of
  // the group, kh, kw), each tap adding weight * shifted input rows.
  std::vector<double> acc(OH * OW);
  for (int64_t n = 0; n < ds[0]; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / out_per_group;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t i = 0; i < I; ++i) {
        const float* plane = data + (n * C + g * I + i) * H * W;
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw) {
            const double wv = weight[((o * I + i) * KH + kh) * KW + kw];
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
              if (!inside(h, H)) continue;  // zero padding
              const float* row = plane + h * W;
              const int64_t shift = kw * a.dilation_w - a.pad_left;
              double* acc_row = acc.data() + oh * OW;
              for (int64_t ow = ow_begin[kw]; ow < ow_end[kw]; ++ow) acc_row[ow] += wv * row[ow * a.stride_w + shift];
            }
          }
      }
      float* dst = out + (n * O + o) * OH * OW;
      for (int64_t p = 0; p < OH * OW; ++p) dst[p] = float(acc[p]);
    }
}

void conv2d_grouped_nhwc(const float* data, const Shape& ds, const float* weight, const Shape& ws, const Conv2dAttrs& a,
                         int64_t groups, float* out) {
  const Shape os = conv2d_grouped_output_shape(ds, ws, a, groups, /*nhwc=*/true);
  const int64_t H = ds[1], W = ds[2], C = ds[3], KH = ws[0], KW = ws[1], I = ws[2], O = ws[3];
  const int64_t OH = os[1], OW = os[2], out_per_group = O / groups;
  // One output pixel at a time: every tap's input channels times the weight
  // row of that channel, accumulated in double for all output channels.
  std::vector<double> acc(O);
  for (int64_t n = 0; n < ds[0]; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t h = oh * a.stride_h - a.pad_top + kh * a.dilation_h;
          if (!inside(h, H)) continue;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const int64_t w = ow * a.stride_w - a.pad_left + kw * a.dilation_w;
            if (!inside(w, W)) continue;
            const float* pixel = data + ((n * H + h) * W + w) * C;
            const float* taps = weight + (kh * KW + kw) * I * O;  // (I, O) for this tap
            for (int64_t g = 0; g < groups; ++g)
              for (int64_t i = 0; i < I; ++i) {
                const double x = pixel[g * I + i];
                const float* wrow = taps + i * O + g * out_per_group;
                double* acc_group = acc.data() + g * out_per_group;
                for (int64_t j = 0; j < out_per_group; ++j) acc_group[j] += x * wrow[j];
              }
          }
        }
        float* dst = out + ((n * OH + oh) * OW + ow) * O;
        for (int64_t o = 0; o < O; ++o) dst[o] = float(acc[o]);
      }
}

namespace {
// f(first row, first column, output offset / C) for every NHWC window; the
// window origin may lie in the padding.
template <typename F>
void for_each_window_nhwc(const Shape& ds, const Pool2dAttrs& a, const std::string& op, F f) {
  check_rank(op, "data (N, H, W, C)", ds, 4);
  Pool2dAttrs as_nchw = a;
  as_nchw.layout = "NCHW";
  const Shape os = pool2d_output_shape(op, {ds[0], ds[3], ds[1], ds[2]}, as_nchw);  // validated as NCHW
  for (int64_t n = 0; n < ds[0]; ++n)
    for (int64_t oh = 0; oh < os[2]; ++oh)
      for (int64_t ow = 0; ow < os[3]; ++ow)
        f(n, oh * a.stride_h - a.pad_top, ow * a.stride_w - a.pad_left, (n * os[2] + oh) * os[3] + ow);
}
}  // namespace

void max_pool2d_nhwc(const float* data, const Shape& ds, const Pool2dAttrs& a, float* out) {
  const int64_t H = ds[1], W = ds[2], C = ds[3];
  for_each_window_nhwc(ds, a, "max_pool2d", [&](int64_t n, int64_t h0, int64_t w0, int64_t pixel) {
    for (int64_t c = 0; c < C; ++c) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + a.kernel_h, H); ++h)
        for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w0 + a.kernel_w, W); ++w)
          best = std::max(best, data[((n * H + h) * W + w) * C + c]);
      out[pixel * C + c] = best;
    }
  });
}

void avg_pool2d_nhwc(const float* data, const Shape& ds, const Pool2dAttrs& a, float* out) {
  const int64_t H = ds[1], W = ds[2], C = ds[3];
  for_each_window_nhwc(ds, a, "avg_pool2d", [&](int64_t n, int64_t h0, int64_t w0, int64_t pixel) {
    for (int64_t c = 0; c < C; ++c) {
      double total = 0;
      int64_t count = 0;
      for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h0 + a.kernel_h, H); ++h)
        for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w0 + a.kernel_w, W); ++w, ++count)
          total += data[((n * H + h) * W + w) * C + c];
      out[pixel * C + c] = float(total / double(a.count_include_pad ? a.kernel_h * a.kernel_w : count));
    }
  });
}

void global_avg_pool2d_nhwc(const float* data, const Shape& ds, float* out) {
  check_rank("global_avg_pool2d", "data (N, H, W, C)", ds, 4);
  const int64_t pixels = ds[1] * ds[2], C = ds[3];
  for (int64_t n = 0; n < ds[0]; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double total = 0;
      for (int64_t p = 0; p < pixels; ++p) total += data[(n * pixels + p) * C + c];
      out[n * C + c] = float(total / double(pixels));
    }
}

void sigmoid(const float* x, int64_t size, float* out) {
  for (int64_t i = 0; i < size; ++i) out[i] = float(1.0 / (1.0 + std::exp(-double(x[i]))));
}

namespace {
// (product of the extents before axis, extent of axis, product after it).
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, size_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.extent = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}
}  // namespace

void batch_norm(const float* x, const Shape& shape, size_t axis, const float* gamma, const float* beta,
                const float* mean, const float* var, double epsilon, float* out) {
  const AxisSplit s = split_at(shape, axis);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t c = 0; c < s.extent; ++c) {
      const double scale = double(gamma[c]) / std::sqrt(double(var[c]) + epsilon);
      const int64_t base = (o * s.extent + c) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) out[base + i] = float((double(x[base + i]) - mean[c]) * scale + beta[c]);
    }
}

void softmax(const float* data, const Shape& shape, size_t axis, float* out) {
  const AxisSplit s = split_at(shape, axis);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return (o * s.extent + j) * s.inner + i; };
      double top = -std::numeric_limits<double>::infinity(), total = 0;
      for (int64_t j = 0; j < s.extent; ++j) top = std::max(top, double(data[at(j)]));
      for (int64_t j = 0; j < s.extent; ++j) total += std::exp(double(data[at(j)]) - top);
      for (int64_t j = 0; j < s.extent; ++j) out[at(j)] = float(std::exp(double(data[at(j)]) - top) / total);
    }
}

void concat(const std::vector<const float*>& inputs, const std::vector<Shape>& shapes, size_t axis, float* out) {
  const int64_t outer = split_at(shapes.at(0), axis).outer;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < inputs.size(); ++k) {
      const AxisSplit s = split_at(shapes[k], axis);
      const int64_t chunk = s.extent * s.inner;  // one input's slab for this outer index
      out = std::copy(inputs[k] + o * chunk, inputs[k] + (o + 1) * chunk, out);
    }
}

void transpose(const float* data, const Shape& shape, const std::vector<int64_t>& perm, float* out) {
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 1), out_shape(rank);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  for (size_t d = 0; d < rank; ++d) out_shape[d] = shape[perm[d]];
  const int64_t total = num_elements(shape);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      offset += (rest % out_shape[d]) * stride[perm[d]];
      rest /= out_shape[d];
    }
    out[i] = data[offset];
  }
}

void pad(const float* data, const Shape& shape, const Shape& before, const Shape& after, float value, float* out) {
  const size_t rank = shape.size();
  Shape out_shape(rank);
  for (size_t d = 0; d < rank; ++d) out_shape[d] = shape[d] + before[d] + after[d];
  const int64_t total = num_elements(out_shape);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, offset = 0, scale = 1;
    bool in_data = true;
    for (size_t d = rank; d-- > 0;) {
      const int64_t src = rest % out_shape[d] - before[d];
      rest /= out_shape[d];
      in_data = in_data && inside(src, shape[d]);
      offset += src * scale;
      scale *= shape[d];
    }
    out[i] = in_data ? data[offset] : value;
  }
}

}  // namespace tessera::ops::reference
