#pragma once
// Shared tiles that tensor-core loops read or write, their rows padded so
// that a warp's accesses to consecutive rows fall in different banks.
//
// Shared memory serves 128 bytes a cycle, as 32 banks of 4 bytes. ldmatrix
// reads each 8 x 8 matrix as 8 rows of 16 bytes, one row a lane, and takes
// one pass only when the 8 rows lie in 8 different 16-byte slots of those
// 128 bytes. A tile whose rows are an even number of 16-byte slots long puts
// rows r and r + 128 / gcd(row bytes, 128) in the same slot: the tensor-core
// sketch's tiles of 32 halves (64 bytes) a row read each matrix in 4 passes,
// those of 64 halves (128 bytes) in 8 (ResNet-18's layer1 at batch 16 in
// half: every ldmatrix of its columns' tile). Rows an odd number of 16-byte
// slots long land 8 consecutive rows in 8 slots: one pass. The TF32 path's
// element reads (a lane's rows g and columns t, codegen/tensor_core_tile.h)
// and the fragments' stores into the C tile (lanes g at column 2t) spread
// over the banks likewise: conflict-free, or 2 lanes a bank, instead of 4 to
// 8.
//
// The padding is 16 bytes a row (8 halves, 4 floats), so that 16-byte
// vector fetches into the tile stay aligned; its elements are never read.
// Applied where the kernel's shared memory stays within `max_shared_bytes`
// (buffer by buffer, in the kernel's order); a kernel without tensor-core
// loops is unchanged.
#include <cstdint>

#include "tir/device_program.h"

namespace tessera::tir {

// The padded row length, in elements, of a shared tile whose rows hold
// `row_elements` of `element_bytes` each: one 16-byte slot more where the
// row is a whole, even number of slots; else `row_elements` (a row of an odd
// number of slots is conflict-free already; one of a part of a slot is no
// ldmatrix row, and padding it would misalign its vectors).
int64_t conflict_free_row(int64_t row_elements, int64_t element_bytes);

void pad_tensor_core_rows(DeviceKernel& kernel, int64_t max_shared_bytes);

}  // namespace tessera::tir
