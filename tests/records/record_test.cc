#include "records/record.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "records/records_test_util.h"
#include "tessera/error.h"

namespace tessera::records {
namespace {

using measure::ErrorKind;
using testing::make_record;

Record full_record() {
  Record r = make_record("a1b2c3", "llvm -mcpu=znver3 -mattr=+avx2,+fma",
                         {1.0 / 3.0, 0.1, 5e-324, 1e-300, 2.5e-6, -0.0, 0.30000000000000004});
  r.task_name = "conv2d_nchwc";
  r.workload = {{"data", {1, 8, 56, 56, 8}}, {"kernel", {8, 8, 3, 3, 8, 8}}, {"strides", {1, 1}}, {"dtype", "float32"}};
  r.config_index = 123456789012345;
  r.config = {{"tile_ic", {2, 4}}, {"tile_oc", {4, 2}}, {"unroll_kw", true}};
  r.trace.split("C", "i", {4, 2}).reorder("C", {"i.0", "i.1"}).vectorize("C", "i.1").parallel("C", "i.0");
  r.trace.pragma("C", "i.0", "auto_unroll_max_step$16");
  r.result.error_message = "line one\nline two\ttabbed \"quoted\"";
  r.result.all_cost = 1.2345678901234567;
  r.result.timestamp = 1712345678.1234567;
  return r;
}

void expect_bit_equal(double a, double b) {
  EXPECT_EQ(std::bit_cast<uint64_t>(a), std::bit_cast<uint64_t>(b)) << a << " vs " << b;
}

TEST(RecordsRecord, RoundTripKeepsEveryFieldAndCostsBitExact) {
  Record r = full_record();
  Record back = Record::from_json_line(r.to_json_line());
  EXPECT_EQ(back.workload_key, r.workload_key);
  EXPECT_EQ(back.task_name, r.task_name);
  EXPECT_EQ(back.workload, r.workload);
  EXPECT_EQ(back.target, r.target);
  EXPECT_EQ(back.config_index, r.config_index);
  EXPECT_EQ(back.config, r.config);
  EXPECT_EQ(back.trace.dump(), r.trace.dump());
  ASSERT_EQ(back.result.costs.size(), r.result.costs.size());
  for (size_t i = 0; i < r.result.costs.size(); ++i) expect_bit_equal(back.result.costs[i], r.result.costs[i]);
  EXPECT_EQ(back.result.error, r.result.error);
  EXPECT_EQ(back.result.error_message, r.result.error_message);
  expect_bit_equal(back.result.all_cost, r.result.all_cost);
  expect_bit_equal(back.result.timestamp, r.result.timestamp);
  EXPECT_EQ(back.to_json_line(), r.to_json_line());
  EXPECT_FALSE(back.confirmed);
}

TEST(RecordsRecord, ConfirmedIsWrittenOnlyWhenTrueAndReadBack) {
  Record r = make_record("k", "llvm", {1e-3, 2e-3, 3e-3});
  EXPECT_EQ(r.to_json_line().find("confirmed"), std::string::npos);  // older readers see the same line
  r.confirmed = true;
  EXPECT_NE(r.to_json_line().find("\"confirmed\":true"), std::string::npos);
  EXPECT_TRUE(Record::from_json_line(r.to_json_line()).confirmed);
}

TEST(RecordsRecord, LineIsOneLineStartingWithTheFormatVersion) {
  std::string line = full_record().to_json_line();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("{\"v\":1,", 0), 0u) << line;
}

TEST(RecordsRecord, EveryErrorKindSurvivesWithEmptyCosts) {
  for (ErrorKind k : {ErrorKind::None, ErrorKind::Instantiation, ErrorKind::CompileHost, ErrorKind::CompileDevice,
                      ErrorKind::RuntimeDevice, ErrorKind::WrongAnswer, ErrorKind::BuildTimeout, ErrorKind::RunTimeout,
                      ErrorKind::Unknown}) {
    Record r = make_record("k", "llvm", {}, k);
    r.result.error_message = "because " + measure::to_string(k);
    Record back = Record::from_json_line(r.to_json_line());
    EXPECT_EQ(back.result.error, k) << measure::to_string(k);
    EXPECT_EQ(back.result.error_message, r.result.error_message);
    EXPECT_TRUE(back.result.costs.empty());
  }
}

TEST(RecordsRecord, ConfigIndexConfigAndTraceMayBeNullOrAbsent) {
  Record back = Record::from_json_line(
      R"({"v":1,"workload_key":"k","task":"dense","target":"llvm","config_index":null,"config":null,)"
      R"("result":{"costs":[1],"error":"none","all_cost":2,"timestamp":3}})");
  EXPECT_FALSE(back.config_index.has_value());
  EXPECT_TRUE(back.config.is_null());
  EXPECT_TRUE(back.workload.is_null());
  EXPECT_TRUE(back.trace.steps().empty());
  EXPECT_EQ(back.result.costs, std::vector<double>{1.0});
  EXPECT_EQ(back.result.error_message, "");
}

TEST(RecordsRecord, MalformedLinesThrowSayingWhatIsWrong) {
  const std::string good = make_record("k", "llvm", {1e-3}).to_json_line();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(0, good.size() / 2), "truncated"},
      {"hello world", "not valid JSON"},
      {std::string("\x00\xff\xfe\x01junk", 8), "not valid JSON"},
      {"[1,2,3]", "not a JSON object, got array"},
      {replaced("\"v\":1", "\"v\":2"), "unknown format version 2"},
      {replaced("\"v\":1,", ""), "missing field 'v'"},
      {replaced(",\"result\":", ",\"resultx\":"), "missing field 'result'"},
      {replaced("\"target\":\"llvm\"", "\"target\":7"), "field 'target' must be a string, got number"},
      {replaced("\"error\":\"none\"", "\"error\":\"exploded\""), "unknown measure error kind 'exploded'"},
      {replaced("\"costs\":[", "\"costs\":[\"fast\","), "'result.costs' must be an array of numbers"},
      {replaced("\"trace\":[]", "\"trace\":[{\"step\":\"teleport\"}]"), "field 'trace'"},
      {good.substr(0, good.size() - 1) + ",\"confirmed\":\"yes\"}", "field 'confirmed' must be true or false"},
  };
  for (const auto& [line, reason] : cases) {
    try {
      Record::from_json_line(line);
      ADD_FAILURE() << "accepted: " << line;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << "got: " << e.what() << "\nwant: " << reason;
    }
  }
}

TEST(RecordsRecord, InvalidUtf8InAnErrorMessageIsReplacedNotFatal) {
  Record r = make_record("k", "llvm", {}, ErrorKind::CompileHost);
  r.result.error_message = "clang said \xff\xfe and died";
  Record back = Record::from_json_line(r.to_json_line());
  EXPECT_NE(back.result.error_message.find("clang said"), std::string::npos);
  EXPECT_NE(back.result.error_message.find("and died"), std::string::npos);
}

TEST(RecordsRecord, NonFiniteCostIsRefusedBeforeWriting) {
  Record r = make_record("k", "llvm", {1.0, std::numeric_limits<double>::infinity()});
  EXPECT_THROW(r.to_json_line(), Error);
  r.result.costs = {1.0};
  r.result.timestamp = std::nan("");
  EXPECT_THROW(r.to_json_line(), Error);
}

}  // namespace
}  // namespace tessera::records
