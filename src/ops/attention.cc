// attention: scaled dot-product attention as one kernel (issue 28). The
// graph pass recognize_attention makes it of batch_matmul -> scale -> mask
// -> softmax -> batch_matmul; here are its shapes, its reference (the
// product, softmax and product in double) and its compute: per tile of
// query rows and tile of keys the scores, their maximum, exponentials and
// sum, and the values weighted by them; then the key tiles combined, each
// rescaled by exp(its maximum - the row's) (the online softmax, its running
// maximum and sum as a reduction over tiles). The score matrix exists one
// (rows x keys) tile at a time.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "ops/operator.h"

namespace tessera::ops {

std::string AttentionAttrs::to_string() const {
  return "scale=" + number_to_string(scale) + " heads=" + std::to_string(heads) + (has_mask ? " mask" : "") +
         (sequence_first ? " sequence_first" : "") + (packed ? " packed" : "") + " rows=" + std::to_string(rows) +
         (keys ? " keys=" + std::to_string(keys) : "");
}

namespace {
// n rounded up to whole `unit`s, where it is more than one.
int64_t whole_units_past_one(int64_t n, int64_t unit) { return n <= unit ? n : (n + unit - 1) / unit * unit; }
}  // namespace

int64_t padded_rows(int64_t m, int64_t rows) { return whole_units_past_one(m, rows); }

int64_t padded_keys(int64_t n) { return whole_units_past_one(n, kKeyVector); }

int64_t key_tile(int64_t n, int64_t keys) {
  if (keys > 0 && n % keys == 0) return keys;
  if (n <= kWholeRowKeys) return n;
  for (int64_t t = kWholeRowKeys; t >= 64; --t)
    if (n % t == 0) return t;
  return n;
}

namespace {

// q, k, v (and the output) as (B, M or N, D) whatever the layout.
Shape rows_of(const Shape& x, const AttentionAttrs& a) {
  return a.sequence_first ? Shape{x[0] * a.heads, x[1], x[3]} : x;
}

// The shapes of q, k and v as (G, rows, H, D) or (B, rows, D): packed, of
// the part (G, rows, H, D) each reads of its (G, rows, 3, H, D) input.
std::vector<Shape> qkv_shapes(const std::vector<Shape>& in, const AttentionAttrs& a) {
  std::vector<Shape> parts(in.begin(), in.begin() + 3);
  if (!a.packed) return parts;
  if (!a.sequence_first) shape_error("a packed attention is sequence first");
  for (Shape& x : parts) {
    if (x.size() != 5 || x[2] != 3)
      shape_error("packed q, k and v must each be (G, rows, 3, H, D), got " + shape_to_string(x));
    x = {x[0], x[1], x[3], x[4]};
  }
  return parts;
}

Shape attention_shape(const std::vector<Shape>& in, const AttentionAttrs& a) {
  const size_t expected = a.has_mask ? 4 : 3;
  if (in.size() != expected) shape_error("takes " + std::to_string(expected) + " inputs, got " + std::to_string(in.size()));
  if (a.heads < 1) shape_error("heads must be positive");
  const std::vector<Shape> qkv = qkv_shapes(in, a);
  const Shape &q4 = qkv[0], &k4 = qkv[1], &v4 = qkv[2];
  const size_t rank = a.sequence_first ? 4 : 3;
  if (q4.size() != rank || k4.size() != rank || v4.size() != rank)
    shape_error(std::string("q, k and v must be ") +
                (a.sequence_first ? "(G, M, H, D), (G, N, H, D), (G, N, H, D)" : "(B, M, D), (B, N, D), (B, N, D)") +
                ", got " + shape_to_string(q4) + ", " + shape_to_string(k4) + ", " + shape_to_string(v4));
  if (a.sequence_first && (q4[2] != a.heads || k4[2] != a.heads))
    shape_error("q " + shape_to_string(q4) + " and k " + shape_to_string(k4) + " do not hold " +
                std::to_string(a.heads) + " heads on their third axis");
  if (k4 != v4) shape_error("k " + shape_to_string(k4) + " and v " + shape_to_string(v4) + " differ");
  const Shape q = rows_of(q4, a), k = rows_of(k4, a);
  if (q[0] != k[0] || q[2] != k[2])
    shape_error("q " + shape_to_string(q4) + " and k " + shape_to_string(k4) + " differ in B or D");
  if (q[0] % a.heads != 0)
    shape_error("heads " + std::to_string(a.heads) + " does not divide B=" + std::to_string(q[0]));
  if (a.rows < 1) shape_error("rows must be positive");
  if (a.keys < 0) shape_error("keys must be positive, or 0 to choose");
  if (a.has_mask) {
    const Shape& m = in[3];
    const Shape full = {q[0] / a.heads, a.heads, q[1], k[1]};
    if (m.size() != 4) shape_error("the mask must have four axes (groups, heads, M, N), got " + shape_to_string(m));
    for (size_t d = 0; d < 4; ++d)
      if (m[d] != 1 && m[d] != full[d])
        shape_error("mask " + shape_to_string(m) + " does not broadcast to " + shape_to_string(full));
  }
  return q4;
}

// The mask's offset for score (b, i, j): (group, head, i, j) broadcast.
int64_t mask_offset(const Shape& m, int64_t heads, int64_t b, int64_t i, int64_t j) {
  return broadcast_offset(m, {b / heads, b % heads, i, j});
}

void reference_attention(const OperatorCall& call, const std::vector<const float*>& in, float* y) {
  const auto& a = call.attrs.as<AttentionAttrs>();
  const std::vector<Shape> qkv = qkv_shapes(call.input_shapes, a);
  const Shape q = rows_of(qkv[0], a), k = rows_of(qkv[1], a);
  const int64_t batch = q[0], m = q[1], n = k[1], d = q[2];
  // Row r of head b of a (B, rows, D) tensor, or of a (G, rows, H, D) one
  // (the output's layout, and q's, k's and v's unpacked).
  auto row = [&](int64_t b, int64_t r, int64_t rows) {
    return a.sequence_first ? ((b / a.heads * rows + r) * a.heads + b % a.heads) * d : (b * rows + r) * d;
  };
  // Row r of head b of q, k or v (part 0, 1 or 2): packed, of its part of its (G, rows, 3, H, D) input.
  auto input_row = [&](int64_t part, int64_t b, int64_t r, int64_t rows) {
    if (!a.packed) return row(b, r, rows);
    return (((b / a.heads * rows + r) * 3 + part) * a.heads + b % a.heads) * d;
  };
  std::vector<double> s(static_cast<size_t>(n));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i) {
      double top = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += double{in[0][input_row(0, b, i, m) + c]} * in[1][input_row(1, b, j, n) + c];
        s[j] = dot * a.scale + (a.has_mask ? in[3][mask_offset(call.input_shapes[3], a.heads, b, i, j)] : 0.0);
        top = std::max(top, s[j]);
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - top));
      for (int64_t c = 0; c < d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * in[2][input_row(2, b, j, n) + c];
        y[row(b, i, m) + c] = static_cast<float>(acc / sum);
      }
    }
}

ir::Tensor attention(const OperatorCall& call, const std::vector<ir::Tensor>& in) {
  const auto& a = call.attrs.as<AttentionAttrs>();
  const ir::Tensor &q = in[0], &k = in[1], &v = in[2];
  const std::vector<Shape> qkv = qkv_shapes({q->shape, k->shape, v->shape}, a);
  const Shape rows = rows_of(qkv[0], a);
  const int64_t batch = rows[0], m = rows[1], n = qkv[1][1], d = rows[2];
  const int64_t keys_computed = padded_keys(n), keys = key_tile(keys_computed, a.keys), tiles = keys_computed / keys;
  // Key j of the padding reads key n - 1 (in bounds; its score is replaced, its weight is 0).
  auto real_key = [&](const ir::Expr& j) { return keys_computed == n ? j : ir::min(j, ir::make_int(n - 1)); };
  // Query rows computed: whole tiles of a.rows; a padded row repeats row m - 1.
  const int64_t rows_computed = padded_rows(m, a.rows);
  auto real_row = [&](const ir::Expr& i) { return rows_computed == m ? i : ir::min(i, ir::make_int(m - 1)); };
  // Element (b, r, c) of q, k or v (part 0, 1 or 2): of head b % heads of
  // group b / heads sequence first; packed, of its input's part `part`.
  enum Part : int64_t { kQ, kK, kV };
  auto element = [&](const ir::Tensor& x, Part part, const ir::Expr& b, const ir::Expr& r, const ir::Expr& c) {
    if (!a.sequence_first) return ir::load(x, {b, r, c});
    const ir::Expr h = ir::make_int(a.heads);
    if (a.packed) return ir::load(x, {ir::floordiv(b, h), r, ir::make_int(part), ir::floormod(b, h), c});
    return ir::load(x, {ir::floordiv(b, h), r, ir::floormod(b, h), c});
  };
  // k transposed to (B, D, keys computed): a score row's vectors then load contiguous keys.
  const ir::Tensor kt =
      ir::compute({batch, d, keys_computed},
                  [&](const std::vector<ir::Var>& x) { return element(k, kK, x[0], real_key(x[2]), x[1]); },
                  unique_name("T_attention_kT", {k}), "attention_transpose_k", {"b", "c", "j"}, {{"layout_copy", "1"}});
  ir::IterVar c = ir::reduce_axis(d, "c");
  const ir::Tensor scores = ir::compute(
      {batch, rows_computed, keys_computed},
      [&](const std::vector<ir::Var>& x) {
        return ir::sum(element(q, kQ, x[0], real_row(x[1]), c.var) * ir::load(kt, {x[0], c.var, x[2]}), {c});
      },
      unique_name("T_attention_scores", {q, k}), "attention_scores", {"b", "i", "j"});
  auto scaled = [&](const std::vector<ir::Expr>& at) {
    ir::Expr s = ir::load(scores, at) * ir::make_float(a.scale);
    if (a.has_mask) {
      const ir::Tensor& mask = in[3];
      const ir::Expr h = ir::make_int(a.heads);
      const std::vector<ir::Expr> full = {ir::floordiv(at[0], h), ir::floormod(at[0], h), at[1], real_key(at[2])};
      std::vector<ir::Expr> idx;
      for (size_t dd = 0; dd < 4; ++dd) idx.push_back(mask->shape[dd] == 1 ? ir::make_int(0) : full[dd]);
      s = s + ir::load(mask, idx);
    }
    if (keys_computed == n) return s;
    return ir::select(at[2] < ir::make_int(n), s, ir::make_float(std::numeric_limits<float>::lowest()));
  };
  // Key jj of key tile t.
  auto key = [&](const ir::Expr& t, const ir::Expr& jj) { return t * ir::make_int(keys) + jj; };
  // Per key tile: its maximum, the exponentials against it, their sum, and
  // the values weighted by them. The maximum and the sum are computed per
  // tile but read once all tiles are done: kept whole (tir/lower.cc).
  const std::map<std::string, std::string> kept_whole = {{"kept_whole", "1"}};
  ir::IterVar j1 = ir::reduce_axis(keys, "jj");
  const ir::Tensor tile_max = ir::compute(
      {batch, rows_computed, tiles},
      [&](const std::vector<ir::Var>& x) {
        return ir::reduce_max(scaled({x[0], x[1], key(x[2], j1.var)}), {j1});
      },
      unique_name("T_attention_tile_max", {scores}), "attention_tile_softmax", {"b", "i", "t"}, kept_whole);
  // Exponentials and probabilities by (tile, key in it): no division of a
  // key's index in the loops that compute them.
  const ir::Tensor e =
      ir::compute({batch, rows_computed, tiles, keys},
                  [&](const std::vector<ir::Var>& x) {
                    return ir::exp(scaled({x[0], x[1], key(x[2], x[3])}) - ir::load(tile_max, {x[0], x[1], x[2]}));
                  },
                  unique_name("T_attention_exp", {tile_max}), "attention_tile_softmax", {"b", "i", "t", "jj"});
  ir::IterVar j2 = ir::reduce_axis(keys, "jj");
  const ir::Tensor tile_sum = ir::compute(
      {batch, rows_computed, tiles},
      [&](const std::vector<ir::Var>& x) {
        return ir::sum(ir::load(e, {x[0], x[1], x[2], j2.var}), {j2});
      },
      unique_name("T_attention_tile_sum", {e}), "attention_tile_softmax", {"b", "i", "t"}, kept_whole);
  // The tile's probabilities among its own keys (so that the tile's sum is
  // read inside the tile, one division per row), and the values weighted by them.
  const ir::Tensor inverse =
      ir::compute({batch, rows_computed, tiles},
                  [&](const std::vector<ir::Var>& x) { return ir::make_float(1.0) / ir::load(tile_sum, to_exprs(x)); },
                  unique_name("T_attention_inverse", {tile_sum}), "attention_tile_softmax", {"b", "i", "t"});
  const ir::Tensor p =
      ir::compute({batch, rows_computed, tiles, keys},
                  [&](const std::vector<ir::Var>& x) {
                    return ir::load(e, to_exprs(x)) * ir::load(inverse, {x[0], x[1], x[2]});
                  },
                  unique_name("T_attention_p", {e, inverse}), "attention_tile_softmax", {"b", "i", "t", "jj"});
  ir::IterVar j3 = ir::reduce_axis(keys, "jj");
  const ir::Tensor tile_values = ir::compute(
      {batch, rows_computed, tiles, d},
      [&](const std::vector<ir::Var>& x) {
        return ir::sum(
            ir::load(p, {x[0], x[1], x[2], j3.var}) * element(v, kV, x[0], real_key(key(x[2], j3.var)), x[3]), {j3});
      },
      unique_name("T_attention_values", {p, v}), "attention_values", {"b", "i", "t", "c"});
  // The tiles combined, each weighted by its sum rescaled by exp(its maximum
  // - the row's maximum).
  ir::IterVar t1 = ir::reduce_axis(tiles, "t");
  const ir::Tensor top = ir::compute({batch, rows_computed},
                                     [&](const std::vector<ir::Var>& x) {
                                       return ir::reduce_max(ir::load(tile_max, {x[0], x[1], t1.var}), {t1});
                                     },
                                     unique_name("T_attention_max", {tile_max}), "attention_combine", {"b", "i"});
  const ir::Tensor weight = ir::compute(
      {batch, rows_computed, tiles},
      [&](const std::vector<ir::Var>& x) {
        return ir::exp(ir::load(tile_max, to_exprs(x)) - ir::load(top, {x[0], x[1]})) *
               ir::load(tile_sum, to_exprs(x));
      },
      unique_name("T_attention_weight", {top, tile_sum}), "attention_combine", {"b", "i", "t"});
  ir::IterVar t2 = ir::reduce_axis(tiles, "t");
  const ir::Tensor sum = ir::compute({batch, rows_computed},
                                     [&](const std::vector<ir::Var>& x) {
                                       return ir::sum(ir::load(weight, {x[0], x[1], t2.var}), {t2});
                                     },
                                     unique_name("T_attention_sum", {weight}), "attention_combine", {"b", "i"});
  ir::IterVar t3 = ir::reduce_axis(tiles, "t");
  const ir::Tensor combined = ir::compute(
      {batch, rows_computed, d},
      [&](const std::vector<ir::Var>& x) {
        return ir::sum(ir::load(weight, {x[0], x[1], t3.var}) * ir::load(tile_values, {x[0], x[1], t3.var, x[2]}),
                       {t3});
      },
      unique_name("T_attention_combined", {weight, tile_values}), "attention_combine", {"b", "i", "c"});
  const std::map<std::string, std::string> attrs = {{"rows", std::to_string(a.rows)}, {"keys", std::to_string(keys)}};
  if (a.sequence_first)
    return ir::compute(
        qkv[0],
        [&](const std::vector<ir::Var>& x) {
          const ir::Expr b = x[0] * ir::make_int(a.heads) + x[2];
          return ir::load(combined, {b, x[1], x[3]}) / ir::load(sum, {b, x[1]});
        },
        unique_name("T_attention", {combined, sum}), "attention", {"g", "i", "h", "c"}, attrs);
  return ir::compute(
      {batch, m, d},
      [&](const std::vector<ir::Var>& x) {
        return ir::load(combined, to_exprs(x)) / ir::load(sum, {x[0], x[1]});
      },
      unique_name("T_attention", {combined, sum}), "attention", {"b", "i", "c"}, attrs);
}

}  // namespace
}  // namespace tessera::ops

TESSERA_OPERATOR(attention) {
  using namespace tessera::ops;
  Operator op;
  op.name = "attention";
  op.num_inputs = Operator::kVariadic;  // q, k, v and an optional mask
  op.default_attrs = AttentionAttrs{};
  op.infer_shape = [](const std::vector<Shape>& in, const Attrs& attrs) {
    return attention_shape(in, attrs.as<AttentionAttrs>());
  };
  op.reference = reference_attention;
  op.compute = attention;
  return op;
}
