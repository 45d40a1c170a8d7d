#pragma once
// conv2d_packed (ops/conv2d_packed.h) lowered to a VTA program.
//
// The output is cut into tiles of tile_co channel blocks x tile_h rows x
// tile_w columns. A tile's accumulators stay on chip while the reduction
// runs over the input channels tile_ci blocks at a time: for each chunk the
// load module brings the input window (zero-padded at the image's border)
// and the weights into their buffers, and one GEMM instruction runs the
// chunk's tile products through a micro-op kernel
//   for co in tile_co: for y in tile_h:            (the instruction's two loops)
//     for ci in tile_ci, ky, kx, x in tile_w:      (micro-ops)
//       acc[co, y, x] += inp[ci, y*s + ky, x*s + kx] x wgt[co, ci, ky, kx]
// Then ALU instructions apply the epilogue to the accumulators in place
// (bias add, rounding add, shift, max, min, residual add, max, min: each one
// instruction over the tile; the bias and residual loaded beside the
// accumulators), and STORE writes the int8 tile out, a channel block at a time.
//
// Virtual threads: oc_nthread x h_nthread neighbouring tiles (along the
// channels and the rows) run as interleaved streams, each with its own part
// of every buffer. Dependency tokens let the load module fill one stream's
// buffers while the compute module works on the other's, and let compute
// reset one stream's accumulators while the store module still writes the
// other's tile: VTA's double buffering, which hides DMA behind the GEMM.
#include <string>

#include <nlohmann/json.hpp>

#include "ops/conv2d_packed.h"
#include "vta/config.h"
#include "vta/program.h"

namespace tessera::vta {

// The conv2d_packed.vta template's knobs, in the units above.
struct Conv2dPackedSchedule {
  int64_t tile_h = 1, tile_w = 1, tile_co = 1, tile_ci = 1;
  int64_t oc_nthread = 1, h_nthread = 1;
  std::string to_string() const;  // "tile_h=14 tile_w=14 tile_co=1 tile_ci=4 oc_nthread=2 h_nthread=1"
  // From the template's knob values ({"tile_h": [outer, tile], ...,
  // "oc_nthread": 2, ...}, autotvm/vta/conv2d_packed.h): each split's last
  // part. Throws tessera::Error naming a missing or malformed knob.
  static Conv2dPackedSchedule from_config(const nlohmann::json& config);
};

// Why the schedule cannot run this convolution on this configuration (a
// tile that does not divide its axis, buffers or micro-op fields too small),
// or "" when it can.
std::string conv2d_packed_misfit(const ops::Conv2dPackedAttrs& attrs, const Conv2dPackedSchedule& schedule,
                                 const VtaConfig& config);

// The program, with DRAM tensors "data", "weight", "output" and, when the
// attrs have them, "bias" and "residual" (write_conv2d_packed_inputs fills
// them). Throws tessera::Error naming the convolution and the
// schedule when conv2d_packed_misfit is not empty, or the attrs' blocks are
// not the configuration's.
Program lower_conv2d_packed(const ops::Conv2dPackedAttrs& attrs, const Conv2dPackedSchedule& schedule,
                            const VtaConfig& config);

// The inputs into the program's DRAM, from ops/conv2d_packed.h's layouts:
// data and weight as they are, the bias (out_channels int32) as one
// accumulator element per output block, the residual (int8, the output's
// shape) widened to the 32-bit words an accumulator LOAD reads. `bias` and
// `residual` are read only when the attrs have them. The output is
// program.read("output", ...), int8 in the output's packed shape.
void write_conv2d_packed_inputs(Program& program, const ops::Conv2dPackedAttrs& attrs, const VtaConfig& config,
                                const int8_t* data, const int8_t* weight, const int32_t* bias, const int8_t* residual);

}  // namespace tessera::vta
