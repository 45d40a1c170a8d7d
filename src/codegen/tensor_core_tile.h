#pragma once
// What a tensor-core loop (tir::ForKind::TensorCore) computes, read off its
// loops so that a code generator can write it as warp instructions: the
// 16 x 16 tile of a Fragment buffer it sets to a constant, accumulates a
// 16 x 16 x 16 product into, or stores elsewhere. Operand tiles are read
// through their strides, so any layout of the operands in memory serves
// (rows or columns contiguous, a padded shared tile, a global tensor).
#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "tir/stmt.h"

namespace tessera::codegen {

// A 16 x 16 tile of a buffer: element (r, c) is at the row-major offset of
// `origin` plus r * row_stride + c * col_stride.
struct TileOperand {
  ir::Tensor buffer;
  std::vector<ir::Expr> origin;  // the indices of element (0, 0)
  int64_t row_stride = 0, col_stride = 0;
};

struct TensorCoreTile {
  enum class Op { Fill, MultiplyAdd, Store };
  Op op = Op::Fill;
  ir::Tensor fragment;                 // the Fragment buffer whose tile this is
  std::vector<ir::Expr> tile;          // which 16 x 16 tile: indices into fragment_tile_grid(fragment)
  double fill_value = 0;               // Fill: every element set to it
  TileOperand a, b;                    // MultiplyAdd: C(i, j) += sum over k of A(i, k) * B(k, j)
  TileOperand destination;             // Store: destination(i, j) = C(i, j)
};

inline constexpr int64_t kTensorCoreTile = 16;

// The fragment buffer's shape counted in tiles: its last two dimensions
// divided by 16. Throws tessera::Error unless both are multiples of 16.
std::vector<int64_t> fragment_tile_grid(const ir::Tensor& fragment);

// Throws tessera::Error naming the loop when it is not a 16-iteration loop
// around one of the three tile computations (tir/stmt.h, ForKind::TensorCore).
TensorCoreTile recognise_tensor_core_tile(const tir::ForNode& loop);

// The CUDA helpers the three operations are written with (mma.sync
// m16n8k16 with fp16 operands and fp32 accumulation, sm_80 and later; with
// both operands fp32 buffers, m16n8k8 in TF32, which only a target allowing
// TF32 tiles: autoschedule/gpu_sketch_rules.h). A half operand tile reaches
// the registers by ldmatrix (tsr_ldmatrix_a / _b) where the code generator
// finds it in shared memory in 16-byte rows, else gathered element by
// element (tsr_gather_a / _b). Needs tsr_f2h (the half-storage conversion)
// declared before it.
std::string cuda_tensor_core_prelude();

}  // namespace tessera::codegen
