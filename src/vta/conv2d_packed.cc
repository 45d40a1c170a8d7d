#include "vta/conv2d_packed.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "tessera/error.h"

namespace tessera::vta {

namespace {

// The sizes a schedule gives the program, derived once for the check and the emitter.
struct Geometry {
  int64_t NB, CB, OB, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
  int64_t th, tw, tco, tci, voc, vh, threads;
  int64_t rows_in, cols_in;  // a tile's input window, padding included
  int64_t inp_part, wgt_part, acc_tile, acc_part;
  int64_t gemm_uops, uops_per_thread;
  bool bias, residual;

  Geometry(const ops::Conv2dPackedAttrs& a, const Conv2dPackedSchedule& s) {
    const ops::Shape os = a.output_shape();
    NB = os[0], CB = a.in_channels / a.block_in, OB = os[1], H = a.height, W = a.width, OH = os[2], OW = os[3];
    KH = a.kernel_h, KW = a.kernel_w, sh = a.stride_h, sw = a.stride_w, ph = a.pad_h, pw = a.pad_w;
    th = s.tile_h, tw = s.tile_w, tco = s.tile_co, tci = s.tile_ci, voc = s.oc_nthread, vh = s.h_nthread;
    threads = voc * vh;
    rows_in = (th - 1) * sh + KH, cols_in = (tw - 1) * sw + KW;
    inp_part = tci * rows_in * cols_in;
    wgt_part = tco * tci * KH * KW;
    bias = a.bias, residual = a.residual;
    acc_tile = tco * th * tw;
    // Beside the accumulators: the residual's tile and one bias element per channel block.
    acc_part = acc_tile * (residual ? 2 : 1) + (bias ? tco : 0);
    gemm_uops = tci * KH * KW * tw;
    uops_per_thread = 3 * tw + gemm_uops;  // reset, residual and bias kernels, GEMM kernel
  }
  int64_t inp_base(int64_t v) const { return v * inp_part; }
  int64_t wgt_base(int64_t v) const { return v * wgt_part; }
  int64_t acc_base(int64_t v) const { return v * acc_part; }
  int64_t res_base(int64_t v) const { return acc_base(v) + acc_tile; }
  int64_t bias_base(int64_t v) const { return acc_base(v) + acc_tile * (residual ? 2 : 1); }
  int64_t reset_uops(int64_t v) const { return v * uops_per_thread; }
  int64_t alu_uops(int64_t v) const { return reset_uops(v) + tw; }
  int64_t bias_uops(int64_t v) const { return reset_uops(v) + 2 * tw; }
  int64_t gemm_uops_begin(int64_t v) const { return reset_uops(v) + 3 * tw; }
};

// A GEMM or ALU loop over one stream's tile: tile_co x tile_h outer
// iterations, each running the micro-ops [begin, begin + count).
LoopOp tile_loop(const Geometry& g, int64_t begin, int64_t count) {
  LoopOp l;
  l.uop_begin = static_cast<uint32_t>(begin);
  l.uop_end = static_cast<uint32_t>(begin + count);
  l.iter_out = static_cast<uint32_t>(g.tco);
  l.iter_in = static_cast<uint32_t>(g.th);
  l.dst_factor_out = static_cast<uint32_t>(g.th * g.tw);
  l.dst_factor_in = static_cast<uint32_t>(g.tw);
  return l;
}

// An ALU operation with an immediate over stream v's accumulators.
Instruction alu(const Geometry& g, int64_t v, AluOp op, int32_t imm) {
  Instruction i;
  i.op = Opcode::Alu;
  i.loop = tile_loop(g, g.alu_uops(v), g.tw);
  i.loop.alu = op;
  i.loop.use_imm = true;
  i.loop.imm = imm;
  return i;
}

// acc += the residual's tile (laid out as the accumulators').
Instruction add_residual(const Geometry& g, int64_t v) {
  Instruction i = alu(g, v, AluOp::Add, 0);
  i.loop.use_imm = false;
  i.loop.src_factor_out = i.loop.dst_factor_out;
  i.loop.src_factor_in = i.loop.dst_factor_in;
  return i;
}

// acc += the bias of each channel block: one element per block, the same for every row and column.
Instruction add_bias(const Geometry& g, int64_t v) {
  Instruction i = alu(g, v, AluOp::Add, 0);
  i.loop.uop_begin = static_cast<uint32_t>(g.bias_uops(v));
  i.loop.uop_end = static_cast<uint32_t>(g.bias_uops(v) + g.tw);
  i.loop.use_imm = false;
  i.loop.src_factor_out = 1;
  i.loop.src_factor_in = 0;
  return i;
}

Instruction memory(Opcode op, BufferId buffer, int64_t sram, int64_t dram, int64_t rows, int64_t cols, int64_t stride) {
  Instruction i;
  i.op = op;
  i.mem.buffer = buffer;
  i.mem.sram_base = static_cast<uint32_t>(sram);
  i.mem.dram_base = static_cast<uint32_t>(dram);
  i.mem.y_size = static_cast<uint32_t>(rows);
  i.mem.x_size = static_cast<uint32_t>(cols);
  i.mem.x_stride = static_cast<uint32_t>(stride);
  return i;
}

}  // namespace

std::string Conv2dPackedSchedule::to_string() const {
  return fmt::format("tile_h={} tile_w={} tile_co={} tile_ci={} oc_nthread={} h_nthread={}", tile_h, tile_w, tile_co,
                     tile_ci, oc_nthread, h_nthread);
}

Conv2dPackedSchedule Conv2dPackedSchedule::from_config(const nlohmann::json& config) {
  const auto knob = [&](const char* name, bool split) -> int64_t {
    try {
      const nlohmann::json& v = config.at(name);
      if (split && (!v.is_array() || v.empty())) throw nlohmann::json::type_error::create(302, "not a split", &v);
      return split ? v.back().get<int64_t>() : v.get<int64_t>();
    } catch (const nlohmann::json::exception&) {
      throw Error(std::string("conv2d_packed.vta config ") + config.dump() + ": knob '" + name +
                  "' is missing or malformed");
    }
  };
  return {.tile_h = knob("tile_h", true),
          .tile_w = knob("tile_w", true),
          .tile_co = knob("tile_co", true),
          .tile_ci = knob("tile_ci", true),
          .oc_nthread = knob("oc_nthread", false),
          .h_nthread = knob("h_nthread", false)};
}

std::string conv2d_packed_misfit(const ops::Conv2dPackedAttrs& attrs, const Conv2dPackedSchedule& s,
                                 const VtaConfig& config) {
  attrs.validate();
  if (attrs.block_batch != config.batch() || attrs.block_in != config.block_in() ||
      attrs.block_out != config.block_out())
    return fmt::format("its blocks ({}, {}, {}) are not the accelerator's (batch {}, block_in {}, block_out {})",
                       attrs.block_batch, attrs.block_in, attrs.block_out, config.batch(), config.block_in(),
                       config.block_out());
  if (s.tile_h < 1 || s.tile_w < 1 || s.tile_co < 1 || s.tile_ci < 1 || s.oc_nthread < 1 || s.h_nthread < 1)
    return "every tile and thread count must be positive";
  const Geometry g(attrs, s);
  if (g.OB % (g.tco * g.voc)) return fmt::format("tile_co x oc_nthread does not divide the {} output blocks", g.OB);
  if (g.OH % (g.th * g.vh)) return fmt::format("tile_h x h_nthread does not divide the {} output rows", g.OH);
  if (g.OW % g.tw) return fmt::format("tile_w does not divide the {} output columns", g.OW);
  if (g.CB % g.tci) return fmt::format("tile_ci does not divide the {} input blocks", g.CB);
  if (g.ph > 15 || g.pw > 15) return "a LOAD pads at most 15 rows or columns";
  const auto over = [](const char* what, int64_t need, int64_t have) {
    return fmt::format("{} {} elements of a buffer of {}", what, need, have);
  };
  if (g.threads * g.inp_part > config.inp_depth())
    return over("the input windows take", g.threads * g.inp_part, config.inp_depth());
  if (g.threads * g.wgt_part > config.wgt_depth())
    return over("the weights take", g.threads * g.wgt_part, config.wgt_depth());
  if (g.threads * g.acc_part > config.acc_depth())
    return over("the accumulator tiles take", g.threads * g.acc_part, config.acc_depth());
  if (g.threads * g.uops_per_thread > config.uop_depth())
    return over("the micro-op kernels take", g.threads * g.uops_per_thread, config.uop_depth());
  // The loop factors' fields (isa.h): 11 bits for accumulator and input strides, 10 for the weights'.
  if (g.th * g.tw >= (1 << 11) || g.sh * g.cols_in >= (1 << 11) || g.tci * g.KH * g.KW >= (1 << 10))
    return "a tile's strides overflow the GEMM loop's fields";
  return "";
}

Program lower_conv2d_packed(const ops::Conv2dPackedAttrs& attrs, const Conv2dPackedSchedule& s,
                            const VtaConfig& config) {
  if (const std::string misfit = conv2d_packed_misfit(attrs, s, config); !misfit.empty())
    throw Error(fmt::format("{} cannot run with schedule {} on VTA: {}", attrs.to_string(), s.to_string(), misfit));
  const Geometry g(attrs, s);
  Program p;

  // The micro-op kernels, one set per stream: (dst, src, wgt) tile indices.
  std::vector<Uop> uops;
  for (int64_t v = 0; v < g.threads; ++v) {
    for (int64_t x = 0; x < g.tw; ++x) uops.push_back({static_cast<uint32_t>(g.acc_base(v) + x), 0, 0});
    for (int64_t x = 0; x < g.tw; ++x)
      uops.push_back({static_cast<uint32_t>(g.acc_base(v) + x), static_cast<uint32_t>(g.res_base(v) + x), 0});
    for (int64_t x = 0; x < g.tw; ++x)
      uops.push_back({static_cast<uint32_t>(g.acc_base(v) + x), static_cast<uint32_t>(g.bias_base(v)), 0});
    for (int64_t ci = 0; ci < g.tci; ++ci)
      for (int64_t ky = 0; ky < g.KH; ++ky)
        for (int64_t kx = 0; kx < g.KW; ++kx)
          for (int64_t x = 0; x < g.tw; ++x)
            uops.push_back({static_cast<uint32_t>(g.acc_base(v) + x),
                            static_cast<uint32_t>(g.inp_base(v) + (ci * g.rows_in + ky) * g.cols_in + x * g.sw + kx),
                            static_cast<uint32_t>(g.wgt_base(v) + (ci * g.KH + ky) * g.KW + kx)});
  }
  p.uops = p.allocate(static_cast<int64_t>(uops.size()) * VtaConfig::kUopBytes);
  for (size_t u = 0; u < uops.size(); ++u) {
    const uint32_t word = uops[u].encode();
    std::memcpy(p.dram.data() + p.uops.offset + u * VtaConfig::kUopBytes, &word, VtaConfig::kUopBytes);
  }
  const int64_t out_elements = ops::num_elements(attrs.output_shape());
  p.tensors.emplace_back("data", p.allocate(ops::num_elements(attrs.data_shape())));
  p.tensors.emplace_back("weight", p.allocate(ops::num_elements(attrs.weight_shape())));
  if (attrs.bias) p.tensors.emplace_back("bias", p.allocate(g.OB * config.acc_element_bytes()));
  if (attrs.residual) p.tensors.emplace_back("residual", p.allocate(out_elements * 4));
  p.tensors.emplace_back("output", p.allocate(out_elements));
  // DRAM addresses in elements of the buffer a LOAD or STORE fills.
  const auto elements_at = [&](const std::string& name, int64_t element_bytes) {
    return p.tensor(name).offset / element_bytes;
  };
  const int64_t data_at = elements_at("data", config.inp_element_bytes());
  const int64_t weight_at = elements_at("weight", config.wgt_element_bytes());
  const int64_t bias_at = attrs.bias ? elements_at("bias", config.acc_element_bytes()) : 0;
  const int64_t residual_at = attrs.residual ? elements_at("residual", config.acc_element_bytes()) : 0;
  const int64_t output_at = elements_at("output", config.out_element_bytes());

  std::vector<Instruction>& code = p.instructions;
  code.push_back(memory(Opcode::Load, BufferId::Uop, 0, p.uops.offset / VtaConfig::kUopBytes, 1,
                        static_cast<int64_t>(uops.size()), static_cast<int64_t>(uops.size())));
  int64_t loads = 0, groups = 0;  // buffer fills and tile groups so far: when tokens are owed
  for (int64_t nb = 0; nb < g.NB; ++nb)
    for (int64_t cg = 0; cg < g.OB / (g.tco * g.voc); ++cg)
      for (int64_t hg = 0; hg < g.OH / (g.th * g.vh); ++hg)
        for (int64_t x0 = 0; x0 < g.OW; x0 += g.tw, ++groups) {
          const auto co0 = [&](int64_t v) { return (cg * g.voc + v / g.vh) * g.tco; };
          const auto y0 = [&](int64_t v) { return (hg * g.vh + v % g.vh) * g.th; };
          // Zero the accumulators once the store module has written the stream's last tile out.
          for (int64_t v = 0; v < g.threads; ++v) {
            Instruction reset;
            reset.op = Opcode::Gemm;
            reset.loop = tile_loop(g, g.reset_uops(v), g.tw);
            reset.loop.reset = true;
            reset.deps.pop_next = groups > 0;
            code.push_back(reset);
          }
          for (int64_t c0 = 0; c0 < g.CB; c0 += g.tci)
            for (int64_t v = 0; v < g.threads; ++v) {
              // The input window of every channel block of the chunk, zero-padded at the border.
              const int64_t ys = y0(v) * g.sh - g.ph, xs = x0 * g.sw - g.pw;
              const int64_t top = std::max<int64_t>(0, -ys), bottom = std::max<int64_t>(0, ys + g.rows_in - g.H);
              const int64_t left = std::max<int64_t>(0, -xs), right = std::max<int64_t>(0, xs + g.cols_in - g.W);
              for (int64_t ci = 0; ci < g.tci; ++ci) {
                Instruction in = memory(Opcode::Load, BufferId::Inp, g.inp_base(v) + ci * g.rows_in * g.cols_in,
                                        data_at + ((nb * g.CB + c0 + ci) * g.H + ys + top) * g.W + xs + left,
                                        g.rows_in - top - bottom, g.cols_in - left - right, g.W);
                in.mem.y_pad_top = top, in.mem.y_pad_bottom = bottom;
                in.mem.x_pad_left = left, in.mem.x_pad_right = right;
                in.deps.pop_next = ci == 0 && loads >= g.threads;  // compute is done with this part
                code.push_back(in);
              }
              Instruction w =
                  memory(Opcode::Load, BufferId::Wgt, g.wgt_base(v), weight_at + (co0(v) * g.CB + c0) * g.KH * g.KW,
                         g.tco, g.tci * g.KH * g.KW, g.CB * g.KH * g.KW);
              w.deps.push_next = true;
              code.push_back(w);
              ++loads;
              Instruction gemm;
              gemm.op = Opcode::Gemm;
              gemm.loop = tile_loop(g, g.gemm_uops_begin(v), g.gemm_uops);
              gemm.loop.wgt_factor_out = static_cast<uint32_t>(g.tci * g.KH * g.KW);
              gemm.loop.src_factor_in = static_cast<uint32_t>(g.sh * g.cols_in);
              gemm.deps.pop_prev = gemm.deps.push_prev = true;
              code.push_back(gemm);
            }
          for (int64_t v = 0; v < g.threads; ++v) {
            const int64_t out_row = (nb * g.OB + co0(v)) * g.OH + y0(v);  // in rows of OW elements
            if (attrs.bias) {
              code.push_back(memory(Opcode::Load, BufferId::Acc, g.bias_base(v), bias_at + co0(v), 1, g.tco, g.tco));
              code.push_back(add_bias(g, v));
            }
            if (attrs.shift > 0) {
              code.push_back(alu(g, v, AluOp::Add, int32_t{1} << (attrs.shift - 1)));
              code.push_back(alu(g, v, AluOp::Shr, attrs.shift));
            }
            code.push_back(alu(g, v, AluOp::Max, attrs.clip_min));
            code.push_back(alu(g, v, AluOp::Min, attrs.clip_max));
            if (attrs.residual) {
              for (int64_t co = 0; co < g.tco; ++co)
                code.push_back(memory(Opcode::Load, BufferId::Acc, g.res_base(v) + co * g.th * g.tw,
                                      residual_at + (out_row + co * g.OH) * g.OW + x0, g.th, g.tw, g.OW));
              code.push_back(add_residual(g, v));
              code.push_back(alu(g, v, AluOp::Max, attrs.residual_clip_min));
              code.push_back(alu(g, v, AluOp::Min, attrs.residual_clip_max));
            }
            code.back().deps.push_next = true;  // the tile is ready to store
            for (int64_t co = 0; co < g.tco; ++co) {
              Instruction st = memory(Opcode::Store, BufferId::Out, g.acc_base(v) + co * g.th * g.tw,
                                      output_at + (out_row + co * g.OH) * g.OW + x0, g.th, g.tw, g.OW);
              st.deps.pop_prev = co == 0;
              st.deps.push_prev = co == g.tco - 1;  // its accumulators may be reset
              code.push_back(st);
            }
          }
        }
  Instruction finish;
  finish.op = Opcode::Finish;
  code.push_back(finish);
  return p;
}

void write_conv2d_packed_inputs(Program& program, const ops::Conv2dPackedAttrs& attrs, const VtaConfig& config,
                                const int8_t* data, const int8_t* weight, const int32_t* bias, const int8_t* residual) {
  program.write("data", data, ops::num_elements(attrs.data_shape()));
  program.write("weight", weight, ops::num_elements(attrs.weight_shape()));
  if (attrs.bias) {
    // One accumulator element per output block: its batch rows each hold the block's biases.
    const int64_t bn = config.batch(), bo = config.block_out(), blocks = attrs.out_channels / bo;
    std::vector<int32_t> tiles(blocks * bn * bo);
    for (int64_t ob = 0; ob < blocks; ++ob)
      for (int64_t b = 0; b < bn; ++b)
        for (int64_t o = 0; o < bo; ++o) tiles[(ob * bn + b) * bo + o] = bias[ob * bo + o];
    program.write("bias", tiles.data(), static_cast<int64_t>(tiles.size() * 4));
  }
  if (attrs.residual) {
    // The accelerator loads accumulators as 32-bit words.
    const std::vector<int32_t> wide(residual, residual + ops::num_elements(attrs.output_shape()));
    program.write("residual", wide.data(), static_cast<int64_t>(wide.size() * 4));
  }
}

}  // namespace tessera::vta
