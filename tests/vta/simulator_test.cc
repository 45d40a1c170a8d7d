// The VTA simulator against references computed here: a matrix product
// through micro-op loops (GEMM), a shift-and-clip epilogue (ALU), the
// narrowed result stored to DRAM, byte for byte; a padded LOAD's zeros; the
// cycle model's numbers for a single transfer and for loads that overlap a
// GEMM as their tokens allow (and do not when a token makes them wait); a
// program that would hang the device, and an access past DRAM, refused
// naming the instruction.
#include "vta/simulator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tessera/error.h"

namespace tessera::vta {
namespace {

Instruction memory(Opcode op, BufferId buffer, uint32_t sram, uint32_t dram, uint32_t y, uint32_t x, uint32_t stride) {
  Instruction i;
  i.op = op;
  i.mem.buffer = buffer;
  i.mem.sram_base = sram;
  i.mem.dram_base = dram;
  i.mem.y_size = y;
  i.mem.x_size = x;
  i.mem.x_stride = stride;
  return i;
}

Instruction loop(Opcode op, uint32_t uop_begin, uint32_t uop_end, uint32_t iter_out, uint32_t iter_in) {
  Instruction i;
  i.op = op;
  i.loop.uop_begin = uop_begin;
  i.loop.uop_end = uop_end;
  i.loop.iter_out = iter_out;
  i.loop.iter_in = iter_in;
  return i;
}

void put_uops(std::vector<uint8_t>& dram, size_t element, const std::vector<Uop>& uops) {
  for (size_t k = 0; k < uops.size(); ++k) {
    const uint32_t w = uops[k].encode();
    std::memcpy(&dram[(element + k) * 4], &w, 4);
  }
}

// y[m][o] = clip(sum_k x[m][k] w[o][k] >> 4, -128, 127) for 4 rows, 32 inputs, 32 outputs.
TEST(VtaSimulator, AMatrixProductThroughMicroOpLoopsEqualsTheReference) {
  const VtaConfig c;
  constexpr int M = 4, KB = 2, OB = 2, B = 16;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(-128, 127);
  int8_t x[M][KB * B], w[OB * B][KB * B];
  for (auto& row : x)
    for (int8_t& v : row) v = static_cast<int8_t>(byte(rng));
  for (auto& row : w)
    for (int8_t& v : row) v = static_cast<int8_t>(byte(rng));
  std::vector<uint8_t> dram(8192, 0);
  // Input tiles (16 bytes) from element 0: tile m * KB + kb.
  for (int m = 0; m < M; ++m)
    for (int kb = 0; kb < KB; ++kb) std::memcpy(&dram[(m * KB + kb) * 16], &x[m][kb * B], B);
  // Weight tiles (256 bytes) from element 1: tile ob * KB + kb, rows o, columns k.
  for (int ob = 0; ob < OB; ++ob)
    for (int kb = 0; kb < KB; ++kb)
      for (int o = 0; o < B; ++o) std::memcpy(&dram[(1 + ob * KB + kb) * 256 + o * B], &w[ob * B + o][kb * B], B);
  put_uops(dram, 512, {{0, 0, 0}, {0, 1, 1}});

  std::vector<Instruction> p;
  p.push_back(memory(Opcode::Load, BufferId::Uop, 0, 512, 1, 2, 2));
  p.push_back(memory(Opcode::Load, BufferId::Inp, 0, 0, 1, M * KB, M * KB));
  p.push_back(memory(Opcode::Load, BufferId::Wgt, 0, 1, 1, OB * KB, OB * KB));
  p.back().deps.push_next = true;
  Instruction reset = loop(Opcode::Gemm, 0, 1, M, OB);  // acc tile m * OB + ob = 0
  reset.loop.reset = true;
  reset.loop.dst_factor_out = OB, reset.loop.dst_factor_in = 1;
  reset.deps.pop_prev = true;
  p.push_back(reset);
  Instruction gemm = loop(Opcode::Gemm, 0, 2, M, OB);  // uop kb: src m * KB + kb, wgt ob * KB + kb
  gemm.loop.dst_factor_out = OB, gemm.loop.dst_factor_in = 1;
  gemm.loop.src_factor_out = KB, gemm.loop.src_factor_in = 0;
  gemm.loop.wgt_factor_out = 0, gemm.loop.wgt_factor_in = KB;
  p.push_back(gemm);
  for (const auto& [op, imm] : {std::pair{AluOp::Shr, 4}, {AluOp::Min, 127}, {AluOp::Max, -128}}) {
    Instruction alu = loop(Opcode::Alu, 0, 1, M * OB, 1);
    alu.loop.dst_factor_out = 1;
    alu.loop.alu = op;
    alu.loop.use_imm = true;
    alu.loop.imm = imm;
    p.push_back(alu);
  }
  p.back().deps.push_next = true;
  p.push_back(memory(Opcode::Store, BufferId::Out, 0, 256, 1, M * OB, M * OB));  // out tiles of 16 bytes at 4096
  p.back().deps.pop_prev = true;
  p.push_back(Instruction{});  // FINISH

  Simulator sim(c);
  const SimulationStats s = sim.run(p, dram);
  for (int m = 0; m < M; ++m)
    for (int o = 0; o < OB * B; ++o) {
      int32_t sum = 0;
      for (int k = 0; k < KB * B; ++k) sum += x[m][k] * w[o][k];
      const int want = std::clamp(sum >> 4, -128, 127);
      // Output tile m * OB + ob holds outputs o = ob * 16 .. + 15.
      ASSERT_EQ(static_cast<int8_t>(dram[4096 + (m * OB + o / B) * 16 + o % B]), want) << m << " " << o;
    }
  EXPECT_EQ(s.gemm_macs, int64_t{M} * OB * KB * 256);
  EXPECT_EQ(s.gemm_cycles, M * OB * KB);
  EXPECT_EQ(s.bytes_loaded.at(BufferId::Inp), M * KB * 16);
  EXPECT_EQ(s.bytes_loaded.at(BufferId::Wgt), OB * KB * 256);
  EXPECT_EQ(s.bytes_stored, M * OB * 16);
  EXPECT_EQ(s.alu_steps, 3 * M * OB);
  EXPECT_EQ(s.load.instructions, 2);
  EXPECT_EQ(s.compute.instructions, 7);
  EXPECT_EQ(s.store.instructions, 1);
  EXPECT_GT(s.gemm_utilisation(), 0);
  EXPECT_LT(s.gemm_utilisation(), 1);
}

TEST(VtaSimulator, APaddedLoadWritesZerosAroundTheBlock) {
  const VtaConfig c;
  std::vector<uint8_t> dram(4096, 0);
  // Accumulator tiles (64 bytes) 2 rows x 3, values 1000 * tile + lane (low bytes survive narrowing).
  for (int t = 0; t < 6; ++t)
    for (int lane = 0; lane < 16; ++lane) {
      const int32_t v = 1000 * (t + 1) + lane;
      std::memcpy(&dram[t * 64 + lane * 4], &v, 4);
    }
  put_uops(dram, 512, {{0, 0, 0}});
  std::vector<Instruction> p;
  p.push_back(memory(Opcode::Load, BufferId::Uop, 0, 512, 1, 1, 1));
  Instruction acc = memory(Opcode::Load, BufferId::Acc, 0, 0, 2, 3, 3);
  acc.mem.y_pad_top = 1, acc.mem.x_pad_left = 1, acc.mem.x_pad_right = 1;  // 3 rows of 5
  p.push_back(acc);
  Instruction add = loop(Opcode::Alu, 0, 1, 15, 1);  // narrow all 15 tiles into the output buffer
  add.loop.dst_factor_out = 1, add.loop.use_imm = true, add.loop.imm = 0;
  add.deps.push_next = true;
  p.push_back(add);
  p.push_back(memory(Opcode::Store, BufferId::Out, 0, 128, 1, 15, 15));  // 16-byte tiles at byte 2048
  p.back().deps.pop_prev = true;
  Simulator sim(c);
  const SimulationStats s = sim.run(p, dram);
  for (int row = 0; row < 3; ++row)
    for (int col = 0; col < 5; ++col)
      for (int lane = 0; lane < 16; ++lane) {
        const bool pad = row == 0 || col == 0 || col == 4;
        const int t = (row - 1) * 3 + (col - 1);
        const int8_t want = pad ? 0 : static_cast<int8_t>((1000 * (t + 1) + lane) & 0xff);
        ASSERT_EQ(static_cast<int8_t>(dram[2048 + (row * 5 + col) * 16 + lane]), want) << row << " " << col;
      }
  EXPECT_EQ(sim.accumulator(0), std::vector<int32_t>(16, 0));
  // The model: the micro-op's 4 bytes in one beat; the block's set-up, a row
  // set-up for its second row, 384 bytes at 8 a cycle and 9 padding tiles;
  // the ALU's fill and 15 steps with an immediate.
  const CycleModel m;
  EXPECT_EQ(s.bytes_loaded.at(BufferId::Acc), 384);
  EXPECT_EQ(s.compute.busy_cycles,
            (m.dma_setup + 1) + (m.dma_setup + m.row_setup + 384 / 8 + 9) + (m.pipeline_fill + 15));
}

TEST(VtaSimulator, LoadsOverlapAGemmAsFarAsTheirTokensAllow) {
  const VtaConfig c;
  const CycleModel m;
  std::vector<uint8_t> dram(64 * 1024, 0);
  Instruction first = memory(Opcode::Load, BufferId::Inp, 0, 0, 1, 64, 64);  // 1024 bytes: 32 + 128 cycles
  first.deps.push_next = true;
  Instruction gemm = loop(Opcode::Gemm, 0, 1, 1000, 1);  // 1000 steps on tile 0
  gemm.deps.pop_prev = true;
  Instruction second = memory(Opcode::Load, BufferId::Wgt, 0, 4, 1, 4, 4);  // 1024 bytes
  const int64_t load_cycles = m.dma_setup + 1024 / m.bus_bytes;
  const int64_t gemm_cycles = m.pipeline_fill + 1000;
  {
    std::vector<uint8_t> d = dram;
    Simulator sim(c);
    const SimulationStats s = sim.run({first, gemm, second}, d);
    EXPECT_EQ(s.load.busy_cycles, 2 * load_cycles);
    EXPECT_EQ(s.cycles, load_cycles + gemm_cycles);  // the second load ran during the GEMM
    EXPECT_EQ(s.gemm_cycles, 1000);
    EXPECT_NEAR(s.gemm_utilisation(), 1000.0 / double(load_cycles + gemm_cycles), 1e-12);
  }
  // The second load waits for the GEMM to free its buffer: nothing overlaps.
  gemm.deps.push_prev = true;
  second.deps.pop_next = true;
  Simulator sim(c);
  const SimulationStats s = sim.run({first, gemm, second}, dram);
  EXPECT_EQ(s.cycles, load_cycles + gemm_cycles + load_cycles);
}

TEST(VtaSimulator, AProgramThatWouldHangOrReachPastDramIsRefusedNamingTheInstruction) {
  const VtaConfig c;
  std::vector<uint8_t> dram(1024, 0);
  Instruction gemm = loop(Opcode::Gemm, 0, 1, 1, 1);
  gemm.deps.pop_prev = true;  // no load pushes
  Simulator sim(c);
  try {
    sim.run({Instruction{}, gemm}, dram);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("VTA instruction 1 (GEMM"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("waits for a dependency token"), std::string::npos) << e.what();
  }
  try {
    sim.run({memory(Opcode::Load, BufferId::Wgt, 0, 2, 1, 4, 4)}, dram);  // bytes 512 .. 1536 of 1024
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("VTA instruction 0 (LOAD wgt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("past its 1024"), std::string::npos) << e.what();
  }
  Instruction load_pops_prev = memory(Opcode::Load, BufferId::Inp, 0, 0, 1, 1, 1);
  load_pops_prev.deps.pop_prev = true;
  EXPECT_THROW(sim.run({load_pops_prev}, dram), Error);
}

}  // namespace
}  // namespace tessera::vta
