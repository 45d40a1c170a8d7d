#pragma once
// The VTA accelerator's architecture as data: the GEMM core's shape (batch x
// block_in by block_out x block_in, one tile product a cycle), the widths of
// inputs, weights and accumulators, and the four on-chip buffers. Read from
// and written as the keys of TVM's vta_config.json (log2 of each size), so a
// user's file describes the same machine here.
//
// The default is the seed's: batch 1, block 16, int8 inputs and weights,
// int32 accumulators, 32 KiB input, 256 KiB weight, 128 KiB accumulator and
// 32 KiB micro-op buffers.
#include <cstdint>
#include <string>

namespace tessera::vta {

struct VtaConfig {
  std::string target = "sim";  // "sim" (our simulator), "pynq", ... : where it runs
  int log_inp_width = 3;       // bits of an input element: 2^3 = 8
  int log_wgt_width = 3;
  int log_acc_width = 5;       // 32-bit accumulators
  int log_batch = 0;           // rows of the input tile
  int log_block = 4;           // block_in = block_out = 16
  int log_uop_buff_size = 15;  // bytes
  int log_inp_buff_size = 15;
  int log_wgt_buff_size = 18;
  int log_acc_buff_size = 17;
  int hw_freq_mhz = 100;       // the core's clock ("HW_FREQ"; the PYNQ design's 100 MHz): cycles to seconds

  int batch() const { return 1 << log_batch; }
  int block_in() const { return 1 << log_block; }
  int block_out() const { return 1 << log_block; }
  int inp_bits() const { return 1 << log_inp_width; }
  int wgt_bits() const { return 1 << log_wgt_width; }
  int acc_bits() const { return 1 << log_acc_width; }

  // Bytes of one element of each buffer: the unit LOAD and STORE move and
  // the micro-ops index (an input tile, a weight tile, an accumulator tile).
  int64_t inp_element_bytes() const { return int64_t{batch()} * block_in() * inp_bits() / 8; }
  int64_t wgt_element_bytes() const { return int64_t{block_out()} * block_in() * wgt_bits() / 8; }
  int64_t acc_element_bytes() const { return int64_t{batch()} * block_out() * acc_bits() / 8; }
  int64_t out_element_bytes() const { return int64_t{batch()} * block_out() * inp_bits() / 8; }
  static constexpr int64_t kUopBytes = 4;  // one micro-op: a 32-bit word

  // Elements each buffer holds.
  int64_t inp_depth() const { return (int64_t{1} << log_inp_buff_size) / inp_element_bytes(); }
  int64_t wgt_depth() const { return (int64_t{1} << log_wgt_buff_size) / wgt_element_bytes(); }
  int64_t acc_depth() const { return (int64_t{1} << log_acc_buff_size) / acc_element_bytes(); }
  int64_t out_depth() const { return acc_depth(); }  // the narrowed copy of the accumulators
  int64_t uop_depth() const { return (int64_t{1} << log_uop_buff_size) / kUopBytes; }

  double seconds(int64_t cycles) const { return static_cast<double>(cycles) / (hw_freq_mhz * 1e6); }

  // Multiply-accumulates of one GEMM step (one micro-op, one cycle).
  int64_t macs_per_gemm() const { return int64_t{batch()} * block_in() * block_out(); }

  // The keys of vta_config.json, e.g. {"TARGET": "sim", "LOG_BLOCK": 4, ...}.
  std::string to_json() const;
  // Throws tessera::Error naming `where` and the key for a missing or bad
  // value: widths other than 8-bit inputs / weights and 32-bit accumulators,
  // buffers too small for one element, sizes whose micro-op fields overflow.
  static VtaConfig from_json(const std::string& text, const std::string& where);
  void validate(const std::string& where) const;
};

}  // namespace tessera::vta
