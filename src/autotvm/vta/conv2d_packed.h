#pragma once
// The conv2d_packed.vta template (seed 003): the knobs of a packed
// convolution's VTA program (vta/conv2d_packed.h), named as the seed's
// template names them:
//   tile_h, tile_w    split of the output rows / columns: [outer, tile]
//   tile_ci, tile_co  split of the input / output channel blocks: [outer, tile]
//   oc_nthread, h_nthread   virtual threads along the channels / rows: 1 or 2
// Batch tiles are one block (the seed's batch is one). Configs that do not
// fit the accelerator (vta::conv2d_packed_misfit) stay in the space, as the
// seed's do, and fail when measured.
#include "autotvm/config_space.h"
#include "ops/conv2d_packed.h"
#include "vta/conv2d_packed.h"

namespace tessera::autotvm::vta {

inline constexpr const char* kConv2dPackedTemplate = "conv2d_packed.vta";

// The space, with a hand-written fallback: whole rows, every input block
// at once if the buffers hold them, one output block, rows split in two
// streams where they divide (else one), the tallest tile that fits.
ConfigSpace conv2d_packed_space(const ops::Conv2dPackedAttrs& attrs, const tessera::vta::VtaConfig& config);
tessera::vta::Conv2dPackedSchedule conv2d_packed_schedule(const ConfigEntity& config);

}  // namespace tessera::autotvm::vta
