#include "codegen/tensor_core_tile.h"

#include "codegen/lane_analysis.h"
#include "ir/functor.h"
#include "tessera/error.h"
#include "tir/simplify.h"

namespace tessera::codegen {

namespace {

using ir::Expr;
using ir::ExprKind;

// The loops of one tile: rows i, columns j and, for a product, the reduce
// steps k (null otherwise).
struct TileLoops {
  ir::Var i, j, k;
};

class Recogniser {
 public:
  explicit Recogniser(const tir::ForNode& loop) : loop_(loop) {}

  TensorCoreTile run() {
    if (loop_.extent != kTensorCoreTile) fail("it runs " + std::to_string(loop_.extent) + " rows, not 16");
    const auto* columns = tir::as<tir::ForNode>(loop_.body);
    if (!columns || columns->extent != kTensorCoreTile || columns->for_kind != tir::ForKind::Serial)
      fail("its body is not a serial loop over 16 columns");
    vars_.i = loop_.var;
    vars_.j = columns->var;
    if (const auto* steps = tir::as<tir::ForNode>(columns->body)) {
      if (steps->extent != kTensorCoreTile || steps->for_kind != tir::ForKind::Serial)
        fail("its reduction is not a serial loop of 16 steps");
      vars_.k = steps->var;
      return multiply_add(tir::as<tir::StoreNode>(steps->body));
    }
    const auto* store = tir::as<tir::StoreNode>(columns->body);
    if (!store) fail("its columns do not store one element each");
    if (const auto* load = store->value.as<ir::TensorLoadNode>()) return store_out(*store, *load);
    if (const auto* constant = store->value.as<ir::FloatImmNode>()) {
      TensorCoreTile t;
      t.op = TensorCoreTile::Op::Fill;
      t.fragment = store->buffer;
      t.tile = fragment_tile(store->buffer, store->indices);
      t.fill_value = constant->value;
      return t;
    }
    fail("its columns store neither a constant nor another tile's element");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("tensor-core loop '" + loop_.var.name() + "': " + why);
  }

  int64_t stride(const std::vector<Expr>& indices, const std::vector<int64_t>& shape, const ir::Var& v,
                 const std::string& what) const {
    const auto s = access_stride(indices, shape, v.node());
    if (!s) fail(what + " is not affine in '" + v.name() + "'");
    return *s;
  }

  // The indices at the tile's first element (row, column and step 0).
  std::vector<Expr> origin(const std::vector<Expr>& indices) const {
    ir::VarMap at_zero;
    for (const ir::Var& v : {vars_.i, vars_.j, vars_.k})
      if (v) at_zero[v] = ir::make_int(0);
    std::vector<Expr> out;
    for (const Expr& e : indices) out.push_back(tir::simplify(ir::substitute(e, at_zero)));
    return out;
  }

  // Which tile of the fragment an access with these indices is: rows run
  // along its second last dimension, columns along its last, each tile
  // starting at a multiple of 16 in both.
  std::vector<Expr> fragment_tile(const ir::Tensor& fragment, const std::vector<Expr>& indices) const {
    fragment_tile_grid(fragment);
    const size_t rank = indices.size();
    if (rank < 2) fail("fragment '" + fragment->name + "' has fewer than two dimensions");
    for (size_t d = 0; d < rank; ++d) {
      const auto si = stride_along(indices[d], vars_.i.node()), sj = stride_along(indices[d], vars_.j.node());
      const int64_t want_i = d == rank - 2, want_j = d == rank - 1;
      if (!si || !sj || *si != want_i || *sj != want_j)
        fail("fragment '" + fragment->name + "' is not read and written a row per row, a column per column");
    }
    std::vector<Expr> tile = origin(indices);
    for (size_t d = rank - 2; d < rank; ++d) {
      if (known_alignment(tile[d]) % kTensorCoreTile != 0)
        fail("fragment '" + fragment->name + "' is accessed at a tile that may not start at a multiple of 16");
      tile[d] = tir::simplify(ir::floordiv(tile[d], ir::make_int(kTensorCoreTile)));
    }
    return tile;
  }

  TileOperand operand(const ir::TensorLoadNode& l, const ir::Var& row, const ir::Var& col, const ir::Var& unused,
                      const std::string& what) const {
    if (stride(l.indices, l.tensor->shape, unused, what) != 0)
      fail(what + " '" + l.tensor->name + "' moves with '" + unused.name() + "'");
    TileOperand o;
    o.buffer = l.tensor;
    o.origin = origin(l.indices);
    o.row_stride = stride(l.indices, l.tensor->shape, row, what);
    o.col_stride = stride(l.indices, l.tensor->shape, col, what);
    return o;
  }

  TensorCoreTile multiply_add(const tir::StoreNode* store) const {
    if (!store) fail("its reduction does not store one element per step");
    const auto* sum = store->value.as<ir::BinaryNode>();
    if (!sum || sum->kind != ExprKind::Add) fail("its reduction is not a sum");
    auto is_accumulator = [&](const Expr& e) {
      const auto* l = e.as<ir::TensorLoadNode>();
      if (!l || l->tensor.get() != store->buffer.get() || l->indices.size() != store->indices.size()) return false;
      for (size_t d = 0; d < l->indices.size(); ++d)
        if (!ir::structural_equal(l->indices[d], store->indices[d])) return false;
      return true;
    };
    const Expr product = is_accumulator(sum->a) ? sum->b : is_accumulator(sum->b) ? sum->a : Expr();
    const auto* mul = product ? product.as<ir::BinaryNode>() : nullptr;
    if (!mul || mul->kind != ExprKind::Mul) fail("its reduction does not add a product to the element it stores");
    const auto* x = mul->a.as<ir::TensorLoadNode>();
    const auto* y = mul->b.as<ir::TensorLoadNode>();
    if (!x || !y) fail("its product is not of two loaded elements");
    // A is the operand along the rows (it does not move with the columns).
    if (ir::uses_var(mul->a, vars_.j)) std::swap(x, y);
    TensorCoreTile t;
    t.op = TensorCoreTile::Op::MultiplyAdd;
    t.fragment = store->buffer;
    t.tile = fragment_tile(store->buffer, store->indices);
    t.a = operand(*x, vars_.i, vars_.k, vars_.j, "operand A");
    t.b = operand(*y, vars_.k, vars_.j, vars_.i, "operand B");
    return t;
  }

  TensorCoreTile store_out(const tir::StoreNode& store, const ir::TensorLoadNode& load) const {
    TensorCoreTile t;
    t.op = TensorCoreTile::Op::Store;
    t.fragment = load.tensor;
    t.tile = fragment_tile(load.tensor, load.indices);
    t.destination.buffer = store.buffer;
    t.destination.origin = origin(store.indices);
    t.destination.row_stride = stride(store.indices, store.buffer->shape, vars_.i, "the destination");
    t.destination.col_stride = stride(store.indices, store.buffer->shape, vars_.j, "the destination");
    return t;
  }

  const tir::ForNode& loop_;
  TileLoops vars_;
};

}  // namespace

std::vector<int64_t> fragment_tile_grid(const ir::Tensor& fragment) {
  std::vector<int64_t> grid = fragment->shape;
  if (grid.size() < 2 || grid[grid.size() - 1] % kTensorCoreTile != 0 || grid[grid.size() - 2] % kTensorCoreTile != 0)
    throw Error("fragment '" + fragment->name + "': its last two dimensions are not multiples of 16");
  grid[grid.size() - 1] /= kTensorCoreTile;
  grid[grid.size() - 2] /= kTensorCoreTile;
  return grid;
}

TensorCoreTile recognise_tensor_core_tile(const tir::ForNode& loop) { return Recogniser(loop).run(); }

std::string cuda_tensor_core_prelude() {
  // Each helper is one warp's instruction sequence; every lane calls it
  // with the same arguments (tir/verify_gpu.h holds schedules to that).
  // A tile's 256 fp32 elements are spread over the warp as two
  // mma.sync.m16n8k16 accumulators (PTX ISA, "Matrix Fragments for
  // mma.m16n8k16"): with g = lane / 4 and t = lane % 4, a lane holds rows g
  // and g + 8, columns 2t and 2t + 1 of each 8-column half. The operands are
  // gathered element by element into the fragments' fp16 pairs, so their
  // layout in memory is free.
  return R"(#ifndef TESSERA_PRELUDE_TENSOR_CORE
#define TESSERA_PRELUDE_TENSOR_CORE
struct tsr_tile16 { float v[8]; };
static __device__ __forceinline__ int tsr_lane() { int l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
static __device__ __forceinline__ unsigned tsr_half_bits(float x) { return tsr_f2h(x); }
static __device__ __forceinline__ unsigned tsr_half_bits(unsigned short x) { return x; }
static __device__ __forceinline__ void tsr_put(float* p, float x) { *p = x; }
static __device__ __forceinline__ void tsr_put(unsigned short* p, float x) { *p = tsr_f2h(x); }
// Elements p[0] and p[stride] as an f16x2 register, the first in the low half.
template <class T> static __device__ __forceinline__ unsigned tsr_pair(const T* p, int stride) {
  return tsr_half_bits(p[0]) | (tsr_half_bits(p[stride]) << 16);
}
static __device__ __forceinline__ void tsr_tc_fill(tsr_tile16& c, float x) {
  for (int e = 0; e < 8; ++e) c.v[e] = x;
}
// A 16 x 16 operand tile as mma.sync's f16x2 registers. A (rows i, steps
// k): r[0] rows g, r[1] rows g + 8 at k = 2t, 2t + 1; r[2], r[3] the same
// at k + 8. B (steps k, columns j): r[2h] column 8h + g at k = 2t, 2t + 1,
// r[2h + 1] at k + 8.
struct tsr_frag16 { unsigned r[4]; };
// Gathered element by element: any layout, any memory.
template <class T> static __device__ __forceinline__ tsr_frag16 tsr_gather_a(const T* a, int a_row, int a_k) {
  const int g = tsr_lane() >> 2, t = tsr_lane() & 3;
  const T* a0 = a + g * a_row + 2 * t * a_k;
  return {{tsr_pair(a0, a_k), tsr_pair(a0 + 8 * a_row, a_k), tsr_pair(a0 + 8 * a_k, a_k),
           tsr_pair(a0 + 8 * a_row + 8 * a_k, a_k)}};
}
template <class T> static __device__ __forceinline__ tsr_frag16 tsr_gather_b(const T* b, int b_k, int b_col) {
  const int g = tsr_lane() >> 2, t = tsr_lane() & 3;
  tsr_frag16 f;
  for (int h = 0; h < 2; ++h) {
    const T* b0 = b + 2 * t * b_k + (8 * h + g) * b_col;
    f.r[2 * h] = tsr_pair(b0, b_k);
    f.r[2 * h + 1] = tsr_pair(b0 + 8 * b_k, b_k);
  }
  return f;
}
// Four 8 x 8 matrices of halves in shared memory, one instruction: lanes
// 8m..8m+7 give the addresses of matrix m's rows (16 contiguous, aligned
// bytes each); a lane gets, of each matrix, row g's elements 2t and 2t + 1
// (TRANS: column g's rows 2t and 2t + 1).
template <bool TRANS> static __device__ __forceinline__ tsr_frag16 tsr_ldmatrix(const unsigned short* row) {
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(row));
  tsr_frag16 f;
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(f.r[0]), "=r"(f.r[1]), "=r"(f.r[2]), "=r"(f.r[3]) : "r"(at));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(f.r[0]), "=r"(f.r[1]), "=r"(f.r[2]), "=r"(f.r[3]) : "r"(at));
  return f;
}
// A from shared halves whose steps are contiguous (TRANS: whose rows are),
// `ld` apart from row to row (step to step): matrix m holds rows 8(m & 1)
// on, steps 8(m >> 1) on.
template <bool TRANS> static __device__ __forceinline__ tsr_frag16 tsr_ldmatrix_a(const unsigned short* a, int ld) {
  const int m = tsr_lane() >> 3, r = tsr_lane() & 7;
  const int row = 8 * (m & 1), step = 8 * (m >> 1);
  return tsr_ldmatrix<TRANS>(TRANS ? a + (step + r) * ld + row : a + (row + r) * ld + step);
}
// B from shared halves whose steps are contiguous (TRANS: whose columns
// are): matrix m holds columns 8(m >> 1) on, steps 8(m & 1) on.
template <bool TRANS> static __device__ __forceinline__ tsr_frag16 tsr_ldmatrix_b(const unsigned short* b, int ld) {
  const int m = tsr_lane() >> 3, r = tsr_lane() & 7;
  const int column = 8 * (m >> 1), step = 8 * (m & 1);
  return tsr_ldmatrix<TRANS>(TRANS ? b + (step + r) * ld + column : b + (column + r) * ld + step);
}
// c(i, j) += sum over k < 16 of A(i, k) * B(k, j), both as registers.
static __device__ __forceinline__ void tsr_tc_mma_frags(tsr_tile16& c, const tsr_frag16& a, const tsr_frag16& b) {
  for (int h = 0; h < 2; ++h) {
    float* d = c.v + 4 * h;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[2 * h]), "r"(b.r[2 * h + 1]));
  }
}
// c(i, j) += sum over k < 16 of a[i * a_row + k * a_k] * b[k * b_k + j * b_col].
template <class TA, class TB>
static __device__ __forceinline__ void tsr_tc_mma(tsr_tile16& c, const TA* a, int a_row, int a_k, const TB* b, int b_k, int b_col) {
  tsr_tc_mma_frags(c, tsr_gather_a(a, a_row, a_k), tsr_gather_b(b, b_k, b_col));
}
// The same for fp32 operands in TF32 (Target::tf32): each element rounded
// to TF32 as the fragments are gathered (cvt.rna), then per 8-column half
// two mma.sync.m16n8k8 over k < 8 and 8 <= k < 16. A lane holds A's rows g
// and g + 8 at columns t and t + 4, B's column g at rows t and t + 4 (PTX
// ISA, "Matrix Fragments for mma.m16n8k8", .tf32); the accumulators are
// laid out as m16n8k16's.
static __device__ __forceinline__ unsigned tsr_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
static __device__ __forceinline__ void tsr_tc_mma(tsr_tile16& c, const float* a, int a_row, int a_k, const float* b, int b_k, int b_col) {
  const int g = tsr_lane() >> 2, t = tsr_lane() & 3;
  for (int s = 0; s < 2; ++s) {
    const float* a0 = a + g * a_row + (8 * s + t) * a_k;
    const unsigned af0 = tsr_tf32(a0[0]), af1 = tsr_tf32(a0[8 * a_row]);
    const unsigned af2 = tsr_tf32(a0[4 * a_k]), af3 = tsr_tf32(a0[8 * a_row + 4 * a_k]);
    for (int h = 0; h < 2; ++h) {
      const float* b0 = b + (8 * s + t) * b_k + (8 * h + g) * b_col;
      const unsigned bf0 = tsr_tf32(b0[0]), bf1 = tsr_tf32(b0[4 * b_k]);
      float* d = c.v + 4 * h;
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                   : "r"(af0), "r"(af1), "r"(af2), "r"(af3), "r"(bf0), "r"(bf1));
    }
  }
}
// p[i * row + j * col] = c(i, j).
template <class T> static __device__ __forceinline__ void tsr_tc_store(T* p, int row, int col, const tsr_tile16& c) {
  const int g = tsr_lane() >> 2, t = tsr_lane() & 3;
  for (int h = 0; h < 2; ++h) {
    T* q = p + g * row + (8 * h + 2 * t) * col;
    tsr_put(q, c.v[4 * h]);
    tsr_put(q + col, c.v[4 * h + 1]);
    tsr_put(q + 8 * row, c.v[4 * h + 2]);
    tsr_put(q + 8 * row + col, c.v[4 * h + 3]);
  }
}
#endif
)";
}

}  // namespace tessera::codegen
