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
#include <nlohmann/json.hpp>
#include <ostream>

#include "autotvm/config_space.h"
#include "autotvm/task.h"
#include "ops/conv2d_packed.h"
#include "records/apply_history_best.h"
#include "vta/conv2d_packed.h"

namespace tessera::autotvm::vta {

inline constexpr const char* kConv2dPackedTemplate = "conv2d_packed.vta";

// The space, with a hand-written fallback: whole rows, every input block
// at once if the buffers hold them, one output block, rows split in two
// streams where they divide (else one), the tallest tile that fits.
ConfigSpace conv2d_packed_space(const ops::Conv2dPackedAttrs& attrs, const tessera::vta::VtaConfig& config);
tessera::vta::Conv2dPackedSchedule conv2d_packed_schedule(const ConfigEntity& config);

// The attributes a task knows a packed convolution by: its epilogue's
// values (the shift, the clip bounds) change neither its schedules nor
// their cost, only which ALU operations run, so they are canonical here (a
// shift of 8 or none, int8's full range): convolutions that differ only in
// them share one task and its records, as TVM's seed task list does.
ops::Conv2dPackedAttrs tuning_attrs(const ops::Conv2dPackedAttrs& attrs);

// The tuning task of one packed convolution on a "vta" target: no DAG (its
// records hold tuning_attrs; measure/vta_measure.h lowers and simulates
// each config), filed under "vta-" and a hash of those attributes.
Task conv2d_packed_task(const ops::Conv2dPackedAttrs& attrs, const target::Target& target);

// The best usable config of the task in `history` for its target, else the
// fallback; `tuned` says which. A record whose config does not fit is
// skipped (and said on `warnings`, as dispatch does).
tessera::vta::Conv2dPackedSchedule dispatch_conv2d_packed(const Task& task, records::ApplyHistoryBest* history,
                                                          std::ostream& warnings, bool* tuned);

}  // namespace tessera::autotvm::vta
