// resize2d: nearest or bilinear resampling of the last two axes, with
// ONNX's coordinate transformations. An output coordinate x maps to the
// input coordinate
//   half_pixel          (x + 0.5) / scale - 0.5
//   pytorch_half_pixel  the same, or 0 when the output has one element
//   align_corners       x * (in - 1) / (out - 1), or 0 when out is 1
//   asymmetric          x / scale
// in float, as onnxruntime computes it; nearest rounds it by `nearest`,
// linear weighs the two neighbours (the coordinate clamped into the input).
#include "ops/resize.h"

#include <cmath>

#include "ops/common.h"
#include "ops/operator.h"

namespace tessera::ops {

std::string Resize2dAttrs::to_string() const {
  return "size=[" + std::to_string(out_h) + ", " + std::to_string(out_w) + "] mode=" + mode +
         " coordinates=" + coordinates + (mode == "nearest" ? " nearest=" + nearest : "");
}

namespace {

void check_attrs(const Resize2dAttrs& a) {
  if (a.out_h <= 0 || a.out_w <= 0) shape_error("the output size must be positive");
  if (!(a.scale_h > 0) || !(a.scale_w > 0)) shape_error("the scales must be positive");
  if (a.mode != "nearest" && a.mode != "linear") shape_error("mode '" + a.mode + "' (nearest or linear)");
  if (a.coordinates != "half_pixel" && a.coordinates != "pytorch_half_pixel" && a.coordinates != "align_corners" &&
      a.coordinates != "asymmetric")
    shape_error("coordinate transformation '" + a.coordinates +
                "' (half_pixel, pytorch_half_pixel, align_corners or asymmetric)");
  if (a.nearest != "round_prefer_floor" && a.nearest != "round_prefer_ceil" && a.nearest != "floor" &&
      a.nearest != "ceil")
    shape_error("nearest mode '" + a.nearest + "'");
}

// The input coordinate of output coordinate x, in float (the reference's).
float source(const Resize2dAttrs& a, int64_t x, int64_t in, int64_t out, double scale) {
  const float xf = static_cast<float>(x), s = static_cast<float>(scale);
  if (a.coordinates == "asymmetric") return xf / s;
  if (a.coordinates == "align_corners")
    return out == 1 ? 0.0f : xf * static_cast<float>(in - 1) / static_cast<float>(out - 1);
  if (a.coordinates == "pytorch_half_pixel" && out == 1) return 0.0f;
  return (xf + 0.5f) / s - 0.5f;
}

int64_t clamp_index(int64_t i, int64_t in) { return i < 0 ? 0 : i >= in ? in - 1 : i; }

int64_t nearest_index(const Resize2dAttrs& a, float v, int64_t in) {
  double r;
  if (a.nearest == "floor") r = std::floor(v);
  else if (a.nearest == "ceil") r = std::ceil(v);
  else if (a.nearest == "round_prefer_ceil") r = std::floor(v + 0.5);
  else r = std::ceil(v - 0.5);  // round_prefer_floor: a half goes down
  return clamp_index(static_cast<int64_t>(r), in);
}

void reference_resize(const OperatorCall& call, const std::vector<const float*>& in, float* y) {
  const auto& a = call.attrs.as<Resize2dAttrs>();
  const Shape& x = call.input_shapes[0];
  const size_t r = x.size();
  const int64_t ih = x[r - 2], iw = x[r - 1], planes = num_elements(x) / (ih * iw);
  for (int64_t p = 0; p < planes; ++p) {
    const float* src = in[0] + p * ih * iw;
    float* dst = y + p * a.out_h * a.out_w;
    for (int64_t oy = 0; oy < a.out_h; ++oy)
      for (int64_t ox = 0; ox < a.out_w; ++ox) {
        const float sy = source(a, oy, ih, a.out_h, a.scale_h), sx = source(a, ox, iw, a.out_w, a.scale_w);
        if (a.mode == "nearest") {
          dst[oy * a.out_w + ox] = src[nearest_index(a, sy, ih) * iw + nearest_index(a, sx, iw)];
          continue;
        }
        const float cy = std::min(std::max(sy, 0.0f), static_cast<float>(ih - 1));
        const float cx = std::min(std::max(sx, 0.0f), static_cast<float>(iw - 1));
        const int64_t y0 = static_cast<int64_t>(cy), x0 = static_cast<int64_t>(cx);
        const int64_t y1 = std::min(y0 + 1, ih - 1), x1 = std::min(x0 + 1, iw - 1);
        const float wy = cy - static_cast<float>(y0), wx = cx - static_cast<float>(x0);
        const float top = src[y0 * iw + x0] * (1 - wx) + src[y0 * iw + x1] * wx;
        const float bottom = src[y1 * iw + x0] * (1 - wx) + src[y1 * iw + x1] * wx;
        dst[oy * a.out_w + ox] = top * (1 - wy) + bottom * wy;
      }
  }
}

// The tensor-expression forms of source() and the roundings, over an int64
// output coordinate.
ir::Expr source_expr(const Resize2dAttrs& a, const ir::Expr& x, int64_t in, int64_t out, double scale) {
  const ir::Expr xf = ir::cast(ir::DType::Float32, x), s = ir::make_float(static_cast<float>(scale));
  if (a.coordinates == "asymmetric") return xf / s;
  if (a.coordinates == "align_corners")
    return out == 1 ? ir::make_float(0.0) : xf * ir::make_float(static_cast<float>(in - 1)) /
                                                ir::make_float(static_cast<float>(out - 1));
  if (a.coordinates == "pytorch_half_pixel" && out == 1) return ir::make_float(0.0);
  return (xf + ir::make_float(0.5)) / s - ir::make_float(0.5);
}

ir::Expr to_int(const ir::Expr& v) { return ir::cast(ir::DType::Int64, v); }  // toward zero

ir::Expr clamp_expr(const ir::Expr& i, int64_t in) {
  return ir::min(ir::max(i, ir::make_int(0)), ir::make_int(in - 1));
}

// floor and ceil where the result is clamped to >= 0 afterwards: truncation
// is floor for v >= 0, and any v < 0 ends at 0 either way.
ir::Expr floor_clamped(const ir::Expr& v) { return to_int(ir::max(v, ir::make_float(0.0))); }
ir::Expr ceil_expr(const ir::Expr& v) {
  const ir::Expr t = to_int(v);
  return t + ir::select(v > ir::cast(ir::DType::Float32, t), ir::make_int(1), ir::make_int(0));
}

ir::Expr nearest_expr(const Resize2dAttrs& a, const ir::Expr& v, int64_t in) {
  ir::Expr i;
  if (a.nearest == "floor") i = floor_clamped(v);
  else if (a.nearest == "ceil") i = ceil_expr(v);
  else if (a.nearest == "round_prefer_ceil") i = floor_clamped(v + ir::make_float(0.5));
  else i = ceil_expr(v - ir::make_float(0.5));
  return clamp_expr(i, in);
}

ir::Tensor resize2d(const ir::Tensor& x, const Resize2dAttrs& a, const Shape& out_shape) {
  const size_t r = x->shape.size();
  const int64_t ih = x->shape[r - 2], iw = x->shape[r - 1];
  auto body = [&](const std::vector<ir::Var>& v) {
    const ir::Expr sy = source_expr(a, v[r - 2], ih, a.out_h, a.scale_h);
    const ir::Expr sx = source_expr(a, v[r - 1], iw, a.out_w, a.scale_w);
    auto at = [&](const ir::Expr& iy, const ir::Expr& ix) {
      std::vector<ir::Expr> idx(v.begin(), v.end() - 2);
      idx.push_back(iy);
      idx.push_back(ix);
      return ir::load(x, idx);
    };
    if (a.mode == "nearest") return at(nearest_expr(a, sy, ih), nearest_expr(a, sx, iw));
    const ir::Expr cy = ir::min(ir::max(sy, ir::make_float(0.0)), ir::make_float(static_cast<float>(ih - 1)));
    const ir::Expr cx = ir::min(ir::max(sx, ir::make_float(0.0)), ir::make_float(static_cast<float>(iw - 1)));
    const ir::Expr y0 = to_int(cy), x0 = to_int(cx);
    const ir::Expr y1 = ir::min(y0 + ir::make_int(1), ir::make_int(ih - 1));
    const ir::Expr x1 = ir::min(x0 + ir::make_int(1), ir::make_int(iw - 1));
    const ir::Expr wy = cy - ir::cast(ir::DType::Float32, y0), wx = cx - ir::cast(ir::DType::Float32, x0);
    const ir::Expr one = ir::make_float(1.0);
    const ir::Expr top = at(y0, x0) * (one - wx) + at(y0, x1) * wx;
    const ir::Expr bottom = at(y1, x0) * (one - wx) + at(y1, x1) * wx;
    return top * (one - wy) + bottom * wy;
  };
  return ir::compute(out_shape, body, unique_name("T_resize2d", {x}), "injective", ax_names(out_shape.size()));
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(resize2d) {
  using namespace tessera::ops;
  Operator op;
  op.name = "resize2d";
  op.default_attrs = Resize2dAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    const auto& a = attrs.as<Resize2dAttrs>();
    check_attrs(a);
    if (in[0].size() < 2) shape_error("data must have at least 2 axes, got " + shape_to_string(in[0]));
    Shape out = in[0];
    out[out.size() - 2] = a.out_h;
    out[out.size() - 1] = a.out_w;
    return out;
  };
  op.reference = reference_resize;
  op.compute = [](const OperatorCall& call, const std::vector<tessera::ir::Tensor>& in) {
    return resize2d(in[0], call.attrs.as<Resize2dAttrs>(), call.output_shape);
  };
  return op;
}
