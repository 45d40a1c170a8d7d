#pragma once
// What the sketch rules ask about a stage of a schedule state. Stages are
// positions in State::stages(); consumers are found through inlined stages,
// because an inlined stage is no loop nest of its own.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule/state.h"

namespace tessera::autoschedule {

bool is_output(const schedule::State& state, int stage);

// The stages whose loops read `stage`'s tensor, looking through inlined stages
// (their consumers read it instead).
std::vector<int> consumers(const schedule::State& state, int stage);

// Inlining always pays: no reduction, not an output, no transcendental call
// (an inlined exp would run once per consumer element, not once per element),
// each input read once per element (a stencil such as Winograd's input
// transform, 16 reads per element, would be recomputed for every consumer
// iteration), not a cache_read copy or a layout copy (made to be computed:
// attrs "layout_copy", as batch_matmul's transposed B).
bool is_strictly_inlineable(const schedule::State& state, int stage);

// A reduction that reuses its inputs: some input is not indexed by every
// spatial axis of extent > 1 (conv2d, dense, batch_matmul), so each loaded
// value serves several outputs and tiling keeps it in registers and caches.
// A row reduction (softmax's sum) reads every input element once: no reuse.
bool needs_multi_level_tiling(const schedule::State& state, int stage);

// An input of the stage (a placeholder it loads directly) that it reads
// with a stride along its innermost spatial axis, the axis multi-level
// tiling vectorizes: that axis indexes dimension `dim`, not the input's
// last. `reuse` is how many outputs read each element (the product of the
// spatial extents that do not index it).
struct StridedInput {
  ir::Tensor tensor;
  size_t dim = 0;
  int64_t reuse = 1;
};
std::vector<StridedInput> strided_inputs(const schedule::State& state, int stage);

// The one consumer that reads `stage` elementwise: the same iteration space,
// every load of the stage indexed by its own axes in order, possibly through
// inlined elementwise stages (bias_add inlined into relu). -1 when there is
// none, or more than one consumer.
int elementwise_matched_consumer(const schedule::State& state, int stage);

// The int8 inner product of a quantized convolution or matrix product, the
// pattern x86 computes in one instruction per vector (vpdpbusd; see
// codegen/byte_dot_product.h): an int32 sum whose innermost reduce axis
// (`bytes`, extent 4) runs over the 4 bytes of a 32-bit lane and whose
// innermost spatial axis (`lanes`) over the lanes, of unsigned bytes indexed
// by the 4 and not the lanes times signed bytes whose last two indices are
// the lanes and the 4. `unsigned_operand` is the tensor the unsigned bytes
// come from. nullopt when the stage is not that.
struct ByteDotProductAxes {
  std::string lanes, bytes;
  ir::Tensor unsigned_operand;
};
std::optional<ByteDotProductAxes> byte_dot_product_axes(const schedule::State& state, int stage);

// Products of the stage's spatial / reduce axis extents.
int64_t spatial_length(const schedule::State& state, int stage);
int64_t reduce_length(const schedule::State& state, int stage);

}  // namespace tessera::autoschedule
