#include "ops/winograd.h"

#include <algorithm>
#include <cmath>

#include "ops/layout.h"

namespace tessera::ops {
namespace {

using Matrix = std::vector<std::vector<double>>;

// The matrices of F(m x m, 3 x 3): input transform B^T (alpha x alpha),
// kernel transform G (alpha x 3), output transform A^T (m x alpha), with
// interpolation points 0, -1, 1 (m = 2) and 0, +-1, +-2 (m = 4) plus infinity.
struct WinogradMatrices {
  Matrix bt, g, at;
};

const WinogradMatrices& matrices(int64_t m) {
  static const WinogradMatrices f2{
      {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
      {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
      {{1, 1, 1, 0}, {0, 1, -1, -1}},
  };
  static const WinogradMatrices f4{
      {{4, 0, -5, 0, 1, 0},
       {0, -4, -4, 1, 1, 0},
       {0, 4, -4, -1, 1, 0},
       {0, -2, -1, 2, 1, 0},
       {0, 2, -1, -2, 1, 0},
       {0, 4, 0, -5, 0, 1}},
      {{1.0 / 4, 0, 0},
       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
       {1.0 / 24, 1.0 / 12, 1.0 / 6},
       {1.0 / 24, -1.0 / 12, 1.0 / 6},
       {0, 0, 1}},
      {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}},
  };
  if (m == 2) return f2;
  if (m == 4) return f4;
  fail("conv2d_winograd", "output tile " + std::to_string(m) + " has no transform; use 2 or 4");
}

// sum of coef * term over the terms with a non-zero coefficient, written as
// adds and subtracts where the coefficient is +-1.
ir::Expr linear_combination(const std::vector<std::pair<double, ir::Expr>>& terms) {
  ir::Expr sum;
  for (const auto& [coef, term] : terms) {
    if (coef == 0) continue;
    const bool unit = std::abs(coef) == 1.0;
    ir::Expr scaled_term = unit ? term : ir::make_float(std::abs(coef)) * term;
    if (!sum) {
      sum = coef < 0 ? ir::make_float(0.0) - scaled_term : scaled_term;
      continue;
    }
    sum = coef < 0 ? sum - scaled_term : sum + scaled_term;
  }
  return sum ? sum : ir::make_float(0.0);
}

// sum over (r, c) of left[i][r] * right[j][c] * value(r, c): one element of
// left X right^T for a constant (i, j).
ir::Expr two_sided(const Matrix& left, const Matrix& right, size_t i, size_t j,
                   const std::function<ir::Expr(size_t, size_t)>& value) {
  std::vector<std::pair<double, ir::Expr>> terms;
  for (size_t r = 0; r < left[i].size(); ++r)
    for (size_t c = 0; c < right[j].size(); ++c)
      if (left[i][r] != 0 && right[j][c] != 0) terms.emplace_back(left[i][r] * right[j][c], value(r, c));
  return linear_combination(terms);
}

struct Tiling {
  int64_t oh, ow, th, tw, tiles;
};

Tiling tiling(const Shape& data, const Conv2dAttrs& a, int64_t m) {
  Tiling t;
  t.oh = data[2] + a.pad_top + a.pad_bottom - 2;
  t.ow = data[3] + a.pad_left + a.pad_right - 2;
  t.th = (t.oh + m - 1) / m;
  t.tw = (t.ow + m - 1) / m;
  t.tiles = data[0] * t.th * t.tw;
  return t;
}

// One element of an input tile's transform B^T d B, for the element `ab` of
// the alpha x alpha result: a select over the alpha^2 elements, each the
// terms of its row of B^T and column of B; `at(r, c)` loads the tile's (r, c).
// Unrolling the loop of `ab` folds the select to one element's terms.
ir::Expr transformed_input(const WinogradMatrices& w, const ir::Var& ab,
                           const std::function<ir::Expr(ir::Expr, ir::Expr)>& at) {
  const int64_t alpha = static_cast<int64_t>(w.bt.size());
  ir::Expr chosen;
  for (int64_t k = alpha * alpha - 1; k >= 0; --k) {
    const ir::Expr value = two_sided(w.bt, w.bt, k / alpha, k % alpha, [&](size_t r, size_t c) {
      return at(ir::Expr(static_cast<int64_t>(r)), ir::Expr(static_cast<int64_t>(c)));
    });
    chosen = chosen ? ir::select(ir::Expr(ab) == ir::Expr(k), value, chosen) : value;
  }
  return chosen;
}

// One output element (h, x) of A^T M A: a select over the m x m positions
// of its tile; `product(e * alpha + u)` loads the tile's product element.
ir::Expr transformed_output(const WinogradMatrices& w, int64_t m, const ir::Var& h, const ir::Var& x,
                            const std::function<ir::Expr(ir::Expr)>& product) {
  const int64_t alpha = m + 2;
  const ir::Expr mm(m), hi = ir::floormod(h, mm), wi = ir::floormod(x, mm);
  ir::Expr chosen;
  for (int64_t k = m * m - 1; k >= 0; --k) {
    const ir::Expr value = two_sided(w.at, w.at, k / m, k % m, [&](size_t e, size_t u) {
      return product(ir::Expr(static_cast<int64_t>(e * alpha + u)));
    });
    chosen = chosen ? ir::select(hi == ir::Expr(k / m) && wi == ir::Expr(k % m), value, chosen) : value;
  }
  return chosen;
}

// Zeros around the data up to whole tiles: every tile reads alpha x alpha positions.
ir::Tensor padded_to_tiles(const ir::Tensor& data, const Conv2dAttrs& a, const Tiling& t, int64_t m) {
  Conv2dAttrs to_tiles = a;
  to_tiles.pad_bottom = t.th * m + 2 - data->shape[2] - a.pad_top;
  to_tiles.pad_right = t.tw * m + 2 - data->shape[3] - a.pad_left;
  return pad_spatial(data, 2, 3, to_tiles, "data_pad");
}

void check_attrs(const std::string& op, const Conv2dAttrs& a, int64_t m) {
  a.validate(op);
  if (a.stride_h != 1 || a.stride_w != 1 || a.dilation_h != 1 || a.dilation_w != 1)
    fail(op, "Winograd needs stride 1 and dilation 1");
  matrices(m);
}

}  // namespace

bool winograd_tile_supported(int64_t m) { return m == 2 || m == 4; }

bool winograd_applies(const Shape& w, const Conv2dAttrs& a) {
  return w.size() == 4 && w[2] == 3 && w[3] == 3 && a.stride_h == 1 && a.stride_w == 1 && a.dilation_h == 1 &&
         a.dilation_w == 1;
}

Shape winograd_weight_shape(const Shape& oihw, int64_t ib, int64_t ob, int64_t m) {
  const std::string op = "conv2d_winograd";
  check_rank(op, "weight (O, I, KH, KW)", oihw, 4);
  if (oihw[2] != 3 || oihw[3] != 3) fail(op, "Winograd needs a 3x3 kernel, got weight " + shape_to_string(oihw));
  const Shape packed = oihwio_shape(oihw, ib, ob);  // checks the blocks
  const int64_t alpha = matrices(m).bt.size();
  return {alpha * alpha, packed[0], packed[1], ib, ob};
}

std::vector<float> winograd_transform_weight(const float* packed, const Shape& s, int64_t m) {
  check_rank("conv2d_winograd", "packed weight (O/ob, I/ib, 3, 3, ib, ob)", s, 6);
  if (s[2] != 3 || s[3] != 3) fail("conv2d_winograd", "Winograd needs a 3x3 kernel, got " + shape_to_string(s));
  const Matrix& g = matrices(m).g;
  const int64_t alpha = static_cast<int64_t>(g.size()), oco = s[0], ico = s[1], ib = s[4], ob = s[5];
  std::vector<float> u(alpha * alpha * oco * ico * ib * ob);
  for (int64_t o = 0; o < oco; ++o)
    for (int64_t c = 0; c < ico; ++c)
      for (int64_t ii = 0; ii < ib; ++ii)
        for (int64_t oi = 0; oi < ob; ++oi) {
          auto tap = [&](int64_t r, int64_t q) {
            return packed[((((o * ico + c) * 3 + r) * 3 + q) * ib + ii) * ob + oi];
          };
          for (int64_t e = 0; e < alpha; ++e)
            for (int64_t v = 0; v < alpha; ++v) {
              double acc = 0;
              for (int64_t r = 0; r < 3; ++r)
                for (int64_t q = 0; q < 3; ++q) acc += g[e][r] * tap(r, q) * g[v][q];
              u[((((e * alpha + v) * oco + o) * ico + c) * ib + ii) * ob + oi] = static_cast<float>(acc);
            }
        }
  return u;
}

Shape conv2d_winograd_nchwc_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& a, int64_t m) {
  const std::string op = "conv2d_winograd_nchwc";
  check_conv_operands(op, "data (N, C/ib, H, W, ib)", data, 5, "weight (alpha^2, O/ob, I/ib, ib, ob)", weight, 5);
  check_attrs(op, a, m);
  const int64_t alpha = m + 2;
  if (weight[0] != alpha * alpha)
    fail(op, "weight " + shape_to_string(weight) + " is not transformed for tile " + std::to_string(m) +
                 " (first extent must be " + std::to_string(alpha * alpha) + ")");
  if (data[1] != weight[2] || data[4] != weight[3])
    fail(op, "data " + shape_to_string(data) + " and weight " + shape_to_string(weight) +
                 " disagree on the input channel blocks");
  const Tiling t = tiling(data, a, m);
  if (t.oh < 1 || t.ow < 1) fail(op, "the padded input " + shape_to_string(data) + " is smaller than the 3x3 kernel");
  return {data[0], weight[1], t.oh, t.ow, weight[4]};
}

ir::Tensor conv2d_winograd_nchwc(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a, int64_t m) {
  const Shape out = conv2d_winograd_nchwc_output_shape(data->shape, weight->shape, a, m);
  const WinogradMatrices& w = matrices(m);
  const int64_t alpha = m + 2;
  const Tiling t = tiling(data->shape, a, m);

  const ir::Tensor padded = padded_to_tiles(data, a, t, m);

  const ir::Expr tw(t.tw), th(t.th), per_image(t.th * t.tw), mm(m);
  auto pack_body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &ab = v[0], &ico = v[1], &tile = v[2], &ii = v[3];
    const ir::Expr n = ir::floordiv(tile, per_image);
    const ir::Expr row = scaled(ir::floormod(ir::floordiv(tile, tw), th), m);
    const ir::Expr col = scaled(ir::floormod(tile, tw), m);
    return transformed_input(w, ab, [&](ir::Expr r, ir::Expr c) { return ir::load(padded, {n, ico, plus(row, r), plus(col, c), ii}); });
  };
  const ir::Tensor packed =
      ir::compute({alpha * alpha, data->shape[1], t.tiles, data->shape[4]}, pack_body,
                  unique_name("winograd_data_pack", {padded}), "winograd_data_pack", {"ab", "ico", "tile", "ii"});

  const ir::IterVar rco = ir::reduce_axis(weight->shape[2], "rco");
  const ir::IterVar rci = ir::reduce_axis(weight->shape[3], "rci");
  auto gemm_body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &ab = v[0], &oco = v[1], &tile = v[2], &ob = v[3];
    return ir::sum(ir::load(weight, {ab, oco, rco.var, rci.var, ob}) * ir::load(packed, {ab, rco.var, tile, rci.var}),
                   {rco, rci});
  };
  const ir::Tensor product =
      ir::compute({alpha * alpha, weight->shape[1], t.tiles, weight->shape[4]}, gemm_body,
                  unique_name("winograd_bgemm", {packed, weight}), "winograd_bgemm", {"ab", "oco", "tile", "ob"});

  auto inverse_body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &oco = v[1], &h = v[2], &x = v[3], &ob = v[4];
    const ir::Expr tile = plus(scaled(plus(scaled(n, t.th), ir::floordiv(h, mm)), t.tw), ir::floordiv(x, mm));
    return transformed_output(w, m, h, x, [&](ir::Expr eu) { return ir::load(product, {eu, oco, tile, ob}); });
  };
  auto attrs = a.to_attrs();
  attrs["tile"] = std::to_string(m);
  attrs["ic_bn"] = std::to_string(data->shape[4]);
  attrs["oc_bn"] = std::to_string(weight->shape[4]);
  return ir::compute(out, inverse_body, unique_name("conv2d_winograd_NCHWc", {product}), "conv2d_winograd_nchwc",
                     {"n", "oc_chunk", "oh", "ow", "oc_block"}, attrs);
}

Shape winograd_nchw_weight_shape(const Shape& oihw, int64_t m) {
  const Shape s = winograd_weight_shape(oihw, 1, 1, m);  // (alpha^2, O, I, 1, 1)
  return {s[0], s[1], s[2]};
}

std::vector<float> winograd_transform_nchw_weight(const float* oihw, const Shape& shape, int64_t m) {
  check_rank("conv2d_winograd", "weight (O, I, 3, 3)", shape, 4);
  // OIHW is the packed layout with blocks of one, (O, I, 3, 3, 1, 1), and
  // the transform's (alpha^2, O, I, 1, 1) is (alpha^2, O, I).
  return winograd_transform_weight(oihw, {shape[0], shape[1], shape[2], shape[3], 1, 1}, m);
}

Shape conv2d_winograd_nchw_output_shape(const Shape& data, const Shape& weight, const Conv2dAttrs& a, int64_t m) {
  const std::string op = "conv2d_winograd_nchw";
  check_conv_operands(op, "data (N, C, H, W)", data, 4, "weight (alpha^2, O, C)", weight, 3);
  check_attrs(op, a, m);
  const int64_t alpha = m + 2;
  if (weight[0] != alpha * alpha)
    fail(op, "weight " + shape_to_string(weight) + " is not transformed for tile " + std::to_string(m) +
                 " (first extent must be " + std::to_string(alpha * alpha) + ")");
  if (data[1] != weight[2])
    fail(op, "data " + shape_to_string(data) + " and weight " + shape_to_string(weight) + " disagree on the input channels");
  const Tiling t = tiling(data, a, m);
  if (t.oh < 1 || t.ow < 1) fail(op, "the padded input " + shape_to_string(data) + " is smaller than the 3x3 kernel");
  return {data[0], weight[1], t.oh, t.ow};
}

ir::Tensor conv2d_winograd_nchw(const ir::Tensor& data, const ir::Tensor& weight, const Conv2dAttrs& a, int64_t m) {
  const Shape out = conv2d_winograd_nchw_output_shape(data->shape, weight->shape, a, m);
  const WinogradMatrices& w = matrices(m);
  const int64_t alpha = m + 2, channels = data->shape[1];
  const Tiling t = tiling(data->shape, a, m);
  const ir::Tensor padded = padded_to_tiles(data, a, t, m);

  // V (alpha^2, C, tiles): the tiles are the product's columns, so
  // neighbouring threads write and read neighbouring tiles. Kept whole: each
  // tile's transform is computed once, not once per output channel.
  const ir::Expr tw(t.tw), th(t.th), per_image(t.th * t.tw), mm(m);
  auto pack_body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &ab = v[0], &c = v[1], &tile = v[2];
    const ir::Expr n = ir::floordiv(tile, per_image);
    const ir::Expr row = scaled(ir::floormod(ir::floordiv(tile, tw), th), m);
    const ir::Expr col = scaled(ir::floormod(tile, tw), m);
    return transformed_input(w, ab, [&](ir::Expr r, ir::Expr q) { return ir::load(padded, {n, c, plus(row, r), plus(col, q)}); });
  };
  const ir::Tensor packed =
      ir::compute({alpha * alpha, channels, t.tiles}, pack_body, unique_name("winograd_data_pack", {padded}),
                  "winograd_data_pack", {"ab", "c", "tile"}, {{"kept_whole", "1"}});

  // M (alpha^2, O, tiles) = U (alpha^2, O, C) . V: alpha^2 matrix products.
  const ir::IterVar rc = ir::reduce_axis(channels, "rc");
  auto gemm_body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &ab = v[0], &o = v[1], &tile = v[2];
    return ir::sum(ir::load(weight, {ab, o, rc.var}) * ir::load(packed, {ab, rc.var, tile}), {rc});
  };
  const ir::Tensor product = ir::compute({alpha * alpha, weight->shape[1], t.tiles}, gemm_body,
                                         unique_name("winograd_bgemm", {packed, weight}), "winograd_bgemm",
                                         {"ab", "o", "tile"});

  auto inverse_body = [&](const std::vector<ir::Var>& v) {
    const ir::Var &n = v[0], &o = v[1], &h = v[2], &x = v[3];
    const ir::Expr tile = plus(scaled(plus(scaled(n, t.th), ir::floordiv(h, mm)), t.tw), ir::floordiv(x, mm));
    return transformed_output(w, m, h, x, [&](ir::Expr eu) { return ir::load(product, {eu, o, tile}); });
  };
  auto attrs = a.to_attrs();
  attrs["tile"] = std::to_string(m);
  return ir::compute(out, inverse_body, unique_name("conv2d_winograd_NCHW", {product}), "conv2d_winograd_nchw",
                     {"n", "f", "y", "x"}, attrs);
}

namespace reference {

void conv2d_winograd_nchwc(const float* data, const Shape& ds, const float* weight, const Shape& ws,
                           const Conv2dAttrs& a, int64_t m, float* out) {
  const Shape os = conv2d_winograd_nchwc_output_shape(ds, ws, a, m);
  const WinogradMatrices& w = matrices(m);
  const int64_t alpha = m + 2, ib = ds[4], ob = ws[4], ic = ds[1] * ib, oc = ws[1] * ob, h = ds[2], wd = ds[3];
  const Tiling t = tiling(ds, a, m);
  auto input = [&](int64_t n, int64_t c, int64_t y, int64_t x) -> double {
    y -= a.pad_top, x -= a.pad_left;
    if (y < 0 || y >= h || x < 0 || x >= wd) return 0.0;
    return data[(((n * ds[1] + c / ib) * h + y) * wd + x) * ib + c % ib];
  };
  auto u = [&](int64_t e, int64_t v, int64_t o, int64_t c) {
    return weight[((((e * alpha + v) * ws[1] + o / ob) * ws[2] + c / ib) * ib + c % ib) * ob + o % ob];
  };
  std::vector<double> packed(ic * alpha * alpha);  // B^T d B of every input channel of one tile
  for (int64_t n = 0; n < ds[0]; ++n)
    for (int64_t ty = 0; ty < t.th; ++ty)
      for (int64_t tx = 0; tx < t.tw; ++tx) {
        for (int64_t c = 0; c < ic; ++c)
          for (int64_t e = 0; e < alpha; ++e)
            for (int64_t v = 0; v < alpha; ++v) {
              double acc = 0;
              for (int64_t r = 0; r < alpha; ++r)
                for (int64_t q = 0; q < alpha; ++q)
                  acc += w.bt[e][r] * input(n, c, ty * m + r, tx * m + q) * w.bt[v][q];
              packed[(c * alpha + e) * alpha + v] = acc;
            }
        for (int64_t o = 0; o < oc; ++o) {
          std::vector<double> product(alpha * alpha, 0.0);
          for (int64_t c = 0; c < ic; ++c)
            for (int64_t k = 0; k < alpha * alpha; ++k)
              product[k] += u(k / alpha, k % alpha, o, c) * packed[c * alpha * alpha + k];
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < m; ++j) {
              const int64_t y = ty * m + i, x = tx * m + j;
              if (y >= t.oh || x >= t.ow) continue;
              double acc = 0;
              for (int64_t e = 0; e < alpha; ++e)
                for (int64_t v = 0; v < alpha; ++v) acc += w.at[i][e] * product[e * alpha + v] * w.at[j][v];
              out[(((n * os[1] + o / ob) * t.oh + y) * t.ow + x) * ob + o % ob] = static_cast<float>(acc);
            }
        }
      }
}

void conv2d_winograd_nchw(const float* data, const Shape& ds, const float* weight, const Shape& ws,
                          const Conv2dAttrs& a, int64_t m, float* out) {
  conv2d_winograd_nchw_output_shape(ds, ws, a, m);
  // NCHW is NCHW[1]c, and (alpha^2, O, C) the blocked weight with blocks of one.
  conv2d_winograd_nchwc(data, {ds[0], ds[1], ds[2], ds[3], 1}, weight, {ws[0], ws[1], ws[2], 1, 1}, a, m, out);
}

}  // namespace reference

}  // namespace tessera::ops
