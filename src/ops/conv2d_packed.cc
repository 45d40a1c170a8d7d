#include "ops/conv2d_packed.h"

#include <fmt/format.h>

#include <algorithm>

#include "ops/operator.h"
#include "tessera/error.h"

namespace tessera::ops {

namespace {

constexpr const char* kOp = "conv2d_packed";

}  // namespace

Shape Conv2dPackedAttrs::data_shape() const {
  return {batch / block_batch, in_channels / block_in, height, width, block_batch, block_in};
}

Shape Conv2dPackedAttrs::weight_shape() const {
  return {out_channels / block_out, in_channels / block_in, kernel_h, kernel_w, block_out, block_in};
}

Shape Conv2dPackedAttrs::output_shape() const {
  return {batch / block_batch, out_channels / block_out, out_height(), out_width(), block_batch, block_out};
}

int64_t Conv2dPackedAttrs::macs() const {
  return batch * out_channels * out_height() * out_width() * in_channels * kernel_h * kernel_w;
}

void Conv2dPackedAttrs::validate() const {
  for (auto [name, v] : {std::pair{"batch", batch},
                         {"in_channels", in_channels},
                         {"height", height},
                         {"width", width},
                         {"out_channels", out_channels},
                         {"kernel_h", kernel_h},
                         {"kernel_w", kernel_w},
                         {"stride_h", stride_h},
                         {"stride_w", stride_w},
                         {"block_batch", block_batch},
                         {"block_in", block_in},
                         {"block_out", block_out}})
    check_positive(kOp, name, v);
  check_non_negative(kOp, "pad_h", pad_h);
  check_non_negative(kOp, "pad_w", pad_w);
  if (batch % block_batch || in_channels % block_in || out_channels % block_out)
    fail(kOp, fmt::format("batch {}, input channels {} and output channels {} must be multiples of their blocks "
                          "{}, {} and {}",
                          batch, in_channels, out_channels, block_batch, block_in, block_out));
  if (pad_h >= kernel_h || pad_w >= kernel_w)
    fail(kOp,
         fmt::format("padding ({}, {}) must be narrower than the kernel ({}, {})", pad_h, pad_w, kernel_h, kernel_w));
  if (height + 2 * pad_h < kernel_h || width + 2 * pad_w < kernel_w)
    fail(kOp, fmt::format("a {}x{} kernel does not fit the padded {}x{} image", kernel_h, kernel_w, height + 2 * pad_h,
                          width + 2 * pad_w));
  if (shift < 0 || shift > 15) fail(kOp, fmt::format("shift {} must be 0..15", shift));
  for (auto [lo, hi] : {std::pair{clip_min, clip_max}, {residual_clip_min, residual_clip_max}})
    if (lo < -128 || hi > 127 || lo > hi)
      fail(kOp, fmt::format("clip bounds [{}, {}] must lie in int8's [-128, 127], lower first", lo, hi));
}

std::string Conv2dPackedAttrs::to_string() const {
  return fmt::format("{} data={} weight={} strides=({}, {}) padding=({}, {}){} shift={} clip=[{}, {}]{}", kOp,
                     shape_to_string(data_shape()), shape_to_string(weight_shape()), stride_h, stride_w, pad_h, pad_w,
                     bias ? " bias" : "", shift, clip_min, clip_max,
                     residual ? fmt::format(" residual clip=[{}, {}]", residual_clip_min, residual_clip_max) : "");
}

Conv2dPackedAttrs dense_packed_attrs(int64_t batch, int64_t in_features, int64_t out_features) {
  Conv2dPackedAttrs a;
  a.batch = batch, a.in_channels = in_features, a.out_channels = out_features;
  a.height = a.width = a.kernel_h = a.kernel_w = 1;
  return a;
}

namespace {

// The one list of fields both directions use.
template <typename A, typename Visit>
void for_each_field(A& a, Visit&& visit) {
  visit("batch", a.batch), visit("in_channels", a.in_channels), visit("height", a.height), visit("width", a.width);
  visit("out_channels", a.out_channels), visit("kernel_h", a.kernel_h), visit("kernel_w", a.kernel_w);
  visit("stride_h", a.stride_h), visit("stride_w", a.stride_w), visit("pad_h", a.pad_h), visit("pad_w", a.pad_w);
  visit("block_batch", a.block_batch), visit("block_in", a.block_in), visit("block_out", a.block_out);
  visit("bias", a.bias), visit("shift", a.shift), visit("clip_min", a.clip_min), visit("clip_max", a.clip_max);
  visit("residual", a.residual), visit("residual_clip_min", a.residual_clip_min);
  visit("residual_clip_max", a.residual_clip_max);
}

}  // namespace

nlohmann::json conv2d_packed_to_json(const Conv2dPackedAttrs& attrs) {
  nlohmann::json j = {{"op", "conv2d_packed"}};
  for_each_field(attrs, [&](const char* key, const auto& value) { j[key] = value; });
  return j;
}

Conv2dPackedAttrs conv2d_packed_from_json(const nlohmann::json& j) {
  Conv2dPackedAttrs a;
  for_each_field(a, [&](const char* key, auto& value) {
    if (!j.contains(key)) throw Error(std::string("conv2d_packed workload: no '") + key + "'");
    try {
      value = j.at(key).get<std::decay_t<decltype(value)>>();
    } catch (const nlohmann::json::exception&) {
      throw Error(std::string("conv2d_packed workload: '") + key + "' is " + j.at(key).dump());
    }
  });
  a.validate();
  return a;
}

std::vector<int8_t> conv2d_packed_reference(const Conv2dPackedAttrs& a, const std::vector<int8_t>& data,
                                            const std::vector<int8_t>& weight, const std::vector<int32_t>& bias,
                                            const std::vector<int8_t>& residual) {
  a.validate();
  const Shape ds = a.data_shape(), ws = a.weight_shape(), os = a.output_shape();
  if (static_cast<int64_t>(data.size()) != num_elements(ds))
    fail(kOp, fmt::format("data holds {} values, its shape {} needs {}", data.size(), shape_to_string(ds),
                          num_elements(ds)));
  if (static_cast<int64_t>(weight.size()) != num_elements(ws))
    fail(kOp, fmt::format("weight holds {} values, its shape {} needs {}", weight.size(), shape_to_string(ws),
                          num_elements(ws)));
  if (a.bias && static_cast<int64_t>(bias.size()) != a.out_channels)
    fail(kOp, fmt::format("bias holds {} values for {} output channels", bias.size(), a.out_channels));
  if (a.residual && static_cast<int64_t>(residual.size()) != num_elements(os))
    fail(kOp, fmt::format("residual holds {} values, the output's shape {} needs {}", residual.size(),
                          shape_to_string(os), num_elements(os)));
  const int64_t bn = a.block_batch, bi = a.block_in, bo = a.block_out;
  const int64_t CB = ds[1], OB = os[1], OH = os[2], OW = os[3];
  std::vector<int8_t> out(num_elements(os));
  for (int64_t nb = 0; nb < os[0]; ++nb)
    for (int64_t ob = 0; ob < OB; ++ob)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t x = 0; x < OW; ++x)
          for (int64_t b = 0; b < bn; ++b)
            for (int64_t o = 0; o < bo; ++o) {
              uint32_t acc = 0;  // two's complement: wraps as the hardware's adders do
              for (int64_t cb = 0; cb < CB; ++cb)
                for (int64_t ky = 0; ky < a.kernel_h; ++ky)
                  for (int64_t kx = 0; kx < a.kernel_w; ++kx) {
                    const int64_t iy = y * a.stride_h - a.pad_h + ky, ix = x * a.stride_w - a.pad_w + kx;
                    if (iy < 0 || iy >= a.height || ix < 0 || ix >= a.width) continue;
                    const int8_t* d = &data[((((nb * CB + cb) * a.height + iy) * a.width + ix) * bn + b) * bi];
                    const int8_t* w = &weight[((((ob * CB + cb) * a.kernel_h + ky) * a.kernel_w + kx) * bo + o) * bi];
                    for (int64_t i = 0; i < bi; ++i) acc += static_cast<uint32_t>(int32_t{d[i]} * int32_t{w[i]});
                  }
              const int64_t index = ((((nb * OB + ob) * OH + y) * OW + x) * bn + b) * bo + o;
              if (a.bias) acc += static_cast<uint32_t>(bias[ob * bo + o]);
              if (a.shift > 0) acc += uint32_t{1} << (a.shift - 1);
              int32_t v = std::min(std::max(static_cast<int32_t>(acc) >> a.shift, a.clip_min), a.clip_max);
              if (a.residual) v = std::min(std::max(v + residual[index], a.residual_clip_min), a.residual_clip_max);
              out[index] = static_cast<int8_t>(v);
            }
  return out;
}

}  // namespace tessera::ops

namespace {

using tessera::ops::Attrs;
using tessera::ops::Conv2dPackedAttrs;
using tessera::ops::Shape;

std::vector<int8_t> bytes_of(const float* values, int64_t n) {
  std::vector<int8_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(values[i]);
  return out;
}

// Inputs: data, weight, then the bias and the residual when the attrs have them.
size_t expected_inputs(const Conv2dPackedAttrs& a) { return 2 + (a.bias ? 1 : 0) + (a.residual ? 1 : 0); }

}  // namespace

// A graph node the accelerator computes (graph::graph_pack makes them); no
// CPU kernel: the VTA target's code generator lowers it (vta/conv2d_packed.h).
TESSERA_OPERATOR(conv2d_packed) {
  using namespace tessera::ops;
  Operator op;
  op.name = "conv2d_packed";
  op.num_inputs = Operator::kVariadic;
  op.default_attrs = Conv2dPackedAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<Conv2dPackedAttrs>();
    a.validate();
    if (in.size() != expected_inputs(a))
      shape_error(fmt::format("takes {} inputs (data, weight{}{}), got {}", expected_inputs(a), a.bias ? ", bias" : "",
                              a.residual ? ", residual" : "", in.size()));
    const auto expect = [&](size_t i, const char* what, const Shape& want) {
      if (in[i] != want)
        shape_error(fmt::format("{} must be {}, got {}", what, shape_to_string(want), shape_to_string(in[i])));
    };
    expect(0, "data", a.data_shape());
    expect(1, "weight", a.weight_shape());
    if (a.bias) expect(2, "bias", a.bias_shape());
    if (a.residual) expect(in.size() - 1, "residual", a.output_shape());
    return a.output_shape();
  };
  op.infer_dtype = [](const std::vector<tessera::ir::DType>& in, const Attrs& attrs) {
    const auto& a = attrs.as<Conv2dPackedAttrs>();
    using tessera::ir::DType;
    std::vector<DType> want = {DType::Int8, DType::Int8};
    if (a.bias) want.push_back(DType::Int32);
    if (a.residual) want.push_back(DType::Int8);
    if (in != want) fail("conv2d_packed", "takes int8 data and weight, an int32 bias and an int8 residual");
    return DType::Int8;
  };
  op.reference = [](const OperatorCall& call, const std::vector<const float*>& in, float* y) {
    const auto& a = call.attrs.as<Conv2dPackedAttrs>();
    std::vector<int32_t> bias;
    if (a.bias)
      for (int64_t f = 0; f < a.out_channels; ++f) bias.push_back(static_cast<int32_t>(in[2][f]));
    const std::vector<int8_t> out = conv2d_packed_reference(
        a, bytes_of(in[0], num_elements(a.data_shape())), bytes_of(in[1], num_elements(a.weight_shape())), bias,
        a.residual ? bytes_of(in.back(), num_elements(a.output_shape())) : std::vector<int8_t>{});
    for (size_t i = 0; i < out.size(); ++i) y[i] = out[i];
  };
  return op;
}
