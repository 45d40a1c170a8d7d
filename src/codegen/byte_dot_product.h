#pragma once
// What a DotProduct loop (tir::ForKind::DotProduct) computes, read off its
// loops: the int8 inner product of a quantized convolution or matrix product,
//
//   for k in 0..4 (dot_product):
//     for lane in 0..L (vectorized):
//       acc[.. lane ..] = acc[.. lane ..] + u[.. k ..] * s[.. lane, k ..]
//
// u unsigned bytes, the same 4 for every lane (contiguous along k); s signed
// bytes, 4 per lane, the lanes' groups side by side (stride 4 along the
// lane, 1 along k); acc 32-bit, one per lane. That is exactly what x86's
// vpdpbusd computes per 32-bit lane (and vpmaddubsw + vpmaddwd where no
// VNNI, pmaddubsw saturating pairs at 16 bits): the emitter writes it as one
// instruction per vector instead of 4 strided multiplications. Its centered
// form (ir::BytesProduct) multiplies (u - 128) by max(s, -127) instead.
#include <optional>

#include "ir/tensor.h"
#include "tir/stmt.h"

namespace tessera::codegen {

struct ByteDotProduct {
  const tir::ForNode* lanes = nullptr;       // the vectorized loop inside
  const tir::StoreNode* store = nullptr;     // the accumulator's update
  const ir::TensorLoadNode* unsigned_bytes = nullptr;
  const ir::TensorLoadNode* signed_bytes = nullptr;
  bool centered = false;
};

// The parts of `loop` (a DotProduct loop), or nullopt when it is not that
// pattern; it then runs as the serial loop it means.
std::optional<ByteDotProduct> match_byte_dot_product(const tir::ForNode& loop);

}  // namespace tessera::codegen
