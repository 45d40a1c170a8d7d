// The session message of the RPC server: what it accepts, what it refuses.
#include <gtest/gtest.h>

#include <elf.h>

#include <cstring>

#include "rpc/job.h"
#include "tessera/error.h"

namespace tessera::rpc {
namespace {

// The first bytes of an ELF shared object: all a job's check looks at.
std::string shared_object_header() {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_type = ET_DYN;
  return std::string(reinterpret_cast<const char*>(&header), sizeof header);
}

Job valid_job() {
  Job job;
  job.token = "t0";
  job.id = "j0";
  job.name = "cand3.o";
  job.function = "kernel";
  job.inputs = {{4, 8}, {4, 8}};
  job.outputs = {{4, 8}};
  job.options = {.number = 2, .repeat = 3, .min_repeat_ms = 5, .timeout = 4, .tolerance = 1e-3, .num_threads = 1};
  job.check = true;
  job.object = shared_object_header();
  job.expected = std::string(4 * 8 * sizeof(float), '\0');
  return job;
}

TEST(RpcJob, RoundTripsThroughItsMessage) {
  const Job job = valid_job();
  const Job back = decode_job(encode_job(job), {});
  EXPECT_EQ(back.token, "t0");
  EXPECT_EQ(back.name, "cand3.o");
  EXPECT_EQ(back.inputs, job.inputs);
  EXPECT_EQ(back.outputs, job.outputs);
  EXPECT_EQ(back.options.number, 2);
  EXPECT_EQ(back.options.repeat, 3);
  EXPECT_EQ(back.options.min_repeat_ms, 5);
  EXPECT_DOUBLE_EQ(back.options.timeout, 4);
  EXPECT_DOUBLE_EQ(back.options.tolerance, 1e-3);
  EXPECT_EQ(back.options.num_threads, 1);
  EXPECT_TRUE(back.check);
  EXPECT_EQ(back.object, job.object);
  EXPECT_EQ(back.expected, job.expected);
}

// Each broken job is refused with a message naming what is wrong.
void expect_refused(const Message& m, const std::string& because, JobLimits limits = {}) {
  try {
    decode_job(m, limits);
    ADD_FAILURE() << "accepted a job that should be refused for: " << because;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(because), std::string::npos) << e.what();
  }
}

TEST(RpcJob, RefusesNamesThatLeaveTheWorkDirectory) {
  for (const std::string& name :
       std::vector<std::string>{"../x.o", "/etc/passwd", "a/b.o", ".hidden", "", std::string(65, 'a'), "a b.o", "x\n"}) {
    Message m = encode_job(valid_job());
    m.header["name"] = name;
    expect_refused(m, "field 'name'");
  }
  EXPECT_TRUE(is_safe_upload_name("cand-12_b.o"));
}

TEST(RpcJob, RefusesBadShapesOptionsAndBlobs) {
  Message m = encode_job(valid_job());
  m.header["inputs"] = nlohmann::json::array({nlohmann::json::array({4, 0})});
  expect_refused(m, "field 'inputs'");
  m = encode_job(valid_job());
  m.header["outputs"] = nlohmann::json::array({nlohmann::json::array({1 << 20, 1 << 20})});
  expect_refused(m, "more than");
  m = encode_job(valid_job());
  m.header["options"]["repeat"] = 0;
  expect_refused(m, "field 'repeat'");
  m = encode_job(valid_job());
  m.header["options"]["timeout"] = 1e9;
  expect_refused(m, "field 'timeout'");
  m = encode_job(valid_job());
  m.header["options"]["check"] = "yes";
  expect_refused(m, "field 'check'");
  m = encode_job(valid_job());
  m.blobs[1].pop_back();
  expect_refused(m, "the expected output has 127 bytes");
  m = encode_job(valid_job());
  m.blobs.pop_back();
  expect_refused(m, "blob");
  expect_refused(encode_job(valid_job()), "the limit is 16", JobLimits{.max_upload_bytes = 16});
  Job relocatable = valid_job();
  relocatable.object[16] = ET_REL;  // e_type: a .o needs a linker the server does not have
  expect_refused(encode_job(relocatable), "not an ELF shared object");
}

TEST(RpcJob, ResultsRoundTripAndMalformedOnesAreErrors) {
  measure::MeasureResult r;
  r.costs = {1e-3, 2e-3};
  r.all_cost = 0.5;
  const auto back = result_from_json(result_to_json(r));
  EXPECT_EQ(back.costs, r.costs);
  EXPECT_EQ(back.error, measure::ErrorKind::None);
  r.costs.clear();
  r.error = measure::ErrorKind::RunTimeout;
  r.error_message = "no result within 1 s";
  EXPECT_EQ(result_from_json(result_to_json(r)).error, measure::ErrorKind::RunTimeout);
  EXPECT_THROW(result_from_json({{"costs", 3}}), Error);
  EXPECT_THROW(result_from_json({{"costs", {}}, {"error", "sunny"}, {"error_message", ""}, {"all_cost", 0}}), Error);
}

}  // namespace
}  // namespace tessera::rpc
