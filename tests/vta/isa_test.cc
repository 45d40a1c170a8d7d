// The VTA architecture as data: the default configuration is the seed's and
// reads back from vta_config.json's keys; bad files are named; every
// instruction field survives its 128-bit encoding; fields beyond their bits
// or the buffers are refused naming the instruction.
#include <gtest/gtest.h>

#include <random>

#include "tessera/error.h"
#include "vta/config.h"
#include "vta/isa.h"

namespace tessera::vta {
namespace {

TEST(VtaConfig, TheDefaultIsTheSeedsAndRoundTripsThroughItsJson) {
  const VtaConfig c;
  EXPECT_EQ(c.batch(), 1);
  EXPECT_EQ(c.block_in(), 16);
  EXPECT_EQ(c.block_out(), 16);
  EXPECT_EQ(c.inp_depth() * c.inp_element_bytes(), 32 * 1024);
  EXPECT_EQ(c.wgt_depth() * c.wgt_element_bytes(), 256 * 1024);
  EXPECT_EQ(c.acc_depth() * c.acc_element_bytes(), 128 * 1024);
  EXPECT_EQ(c.inp_depth(), 2048);
  EXPECT_EQ(c.wgt_depth(), 1024);
  EXPECT_EQ(c.acc_depth(), 2048);
  EXPECT_EQ(c.macs_per_gemm(), 256);
  const VtaConfig back = VtaConfig::from_json(c.to_json(), "default");
  EXPECT_EQ(back.to_json(), c.to_json());
  const VtaConfig batch2 =
      VtaConfig::from_json(R"({"TARGET": "pynq", "LOG_BATCH": 1, "LOG_ACC_BUFF_SIZE": 17})", "vta_config.json");
  EXPECT_EQ(batch2.target, "pynq");
  EXPECT_EQ(batch2.batch(), 2);
  EXPECT_EQ(batch2.acc_depth(), 1024);
  EXPECT_EQ(batch2.hw_freq_mhz, 100);
  EXPECT_DOUBLE_EQ(batch2.seconds(31'000'000), 0.31);
  EXPECT_EQ(VtaConfig::from_json(R"({"HW_FREQ": 250})", "fast.json").hw_freq_mhz, 250);
}

TEST(VtaConfig, BadFilesAreNamedWithTheirKey) {
  const auto message = [](const std::string& text) {
    try {
      VtaConfig::from_json(text, "my.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{").find("my.json: not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"LOG_BLOCK": "four"})").find("LOG_BLOCK must be an integer"), std::string::npos);
  EXPECT_NE(message(R"({"LOG_INP_WIDTH": 2})").find("8-bit"), std::string::npos);
  EXPECT_NE(message(R"({"LOG_WGT_BUFF_SIZE": 7})").find("LOG_WGT_BUFF_SIZE = 7 holds no element of 256 bytes"),
            std::string::npos);
  EXPECT_NE(message(R"({"LOG_INP_BUFF_SIZE": 20})").find("micro-op's indices"), std::string::npos);
  EXPECT_NE(message(R"({"HW_FREQ": 0})").find("my.json: HW_FREQ (MHz) must be positive"), std::string::npos);
}

Instruction random_instruction(std::mt19937& rng) {
  const auto bits = [&](int n) { return static_cast<uint32_t>(rng() & ((uint64_t{1} << n) - 1)); };
  Instruction i;
  i.op = static_cast<Opcode>(rng() % 5);
  i.deps = {bool(rng() & 1), bool(rng() & 1), bool(rng() & 1), bool(rng() & 1)};
  if (i.op == Opcode::Load || i.op == Opcode::Store) {
    i.mem = {static_cast<BufferId>(rng() % 5),
             bits(16),
             static_cast<uint32_t>(rng()),
             bits(16),
             bits(16),
             bits(16),
             bits(4),
             bits(4),
             bits(4),
             bits(4)};
  } else if (i.op == Opcode::Gemm || i.op == Opcode::Alu) {
    i.loop.reset = rng() & 1;
    i.loop.uop_begin = bits(13), i.loop.uop_end = bits(14), i.loop.iter_out = bits(14), i.loop.iter_in = bits(14);
    i.loop.dst_factor_out = bits(11), i.loop.dst_factor_in = bits(11);
    i.loop.src_factor_out = bits(11), i.loop.src_factor_in = bits(11);
    if (i.op == Opcode::Gemm) {
      i.loop.wgt_factor_out = bits(10), i.loop.wgt_factor_in = bits(10);
    } else {
      i.loop.alu = static_cast<AluOp>(rng() % 5);
      i.loop.use_imm = rng() & 1;
      i.loop.imm = static_cast<int16_t>(bits(16));
    }
  }
  return i;
}

TEST(VtaIsa, EveryFieldSurvivesItsEncoding) {
  std::mt19937 rng(7);
  for (int n = 0; n < 2000; ++n) {
    const Instruction i = random_instruction(rng);
    ASSERT_EQ(decode(encode(i)), i) << i.describe();
  }
  Instruction alu;
  alu.op = Opcode::Alu;
  alu.loop.use_imm = true;
  alu.loop.imm = -32768;
  EXPECT_EQ(decode(encode(alu)).loop.imm, -32768);
  const Uop u{2047, 1234, 1023};
  EXPECT_EQ(Uop::decode(u.encode()), u);
  EXPECT_THROW(decode({7, 0}), Error);  // opcode 7
}

TEST(VtaIsa, FieldsBeyondTheirBitsOrBuffersAreRefusedNamingTheInstruction) {
  const VtaConfig c;
  Instruction gemm;
  gemm.op = Opcode::Gemm;
  gemm.loop.uop_end = 9000;  // the micro-op buffer holds 8192
  try {
    check_fields(gemm, 3, c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("VTA instruction 3 (GEMM): micro-ops [0, 9000)"), std::string::npos)
        << e.what();
  }
  Instruction load;
  load.op = Opcode::Load;
  load.mem.y_pad_top = 16;
  EXPECT_THROW(check_fields(load, 0, c), Error);
  Instruction store;
  store.op = Opcode::Store;
  store.mem.buffer = BufferId::Acc;
  EXPECT_THROW(check_fields(store, 0, c), Error);
  EXPECT_EQ(store.module(), Module::Store);
  load.mem.buffer = BufferId::Uop;
  EXPECT_EQ(load.module(), Module::Compute);
  load.mem.buffer = BufferId::Wgt;
  EXPECT_EQ(load.module(), Module::Load);
}

}  // namespace
}  // namespace tessera::vta
