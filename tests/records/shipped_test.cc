// Which shipped logs a target takes (records/shipped.h): where machines'
// logs share a target, the one tuned on the same CPU, else on one of the
// same vendor, else the first by name; never two machines' records mixed.
#include "records/shipped.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "records/log_file.h"
#include "records_test_util.h"

namespace tessera::records {
namespace {

using testing::make_record;
using testing::ScratchDir;

std::vector<std::string> names(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(std::filesystem::path(p).filename().string());
  return out;
}

TEST(ShippedLogs, NearestMachineOnly) {
  // Three AVX-512 machines' logs for the same target (threads=2), and one of
  // another thread count.
  ScratchDir dir;
  write_records(dir.file("a-xeon.log"), {make_record("k1", "llvm -mcpu=sapphirerapids -threads=2", {1e-3}),
                                         make_record("k2", "llvm -mcpu=sapphirerapids -threads=2", {2e-3})});
  write_records(dir.file("b-zen4.log"), {make_record("k1", "llvm -mcpu=znver4 -threads=2", {3e-3})});
  write_records(dir.file("c-skylake.log"), {make_record("k1", "llvm -mcpu=skylake-avx512 -threads=2", {4e-3})});
  write_records(dir.file("d-zen4-one-thread.log"), {make_record("k1", "llvm -mcpu=znver4 -threads=1", {5e-3})});
  std::ostringstream warnings;
  const auto wanted = [&](const std::string& target) {
    return shipped_records_for(dir.file(""), target::Target::parse(target), warnings);
  };
  ASSERT_EQ(target::Target::parse("llvm -mcpu=znver4 -threads=2").match_key(),
            target::Target::parse("llvm -mcpu=sapphirerapids -threads=2").match_key());

  const ShippedRecords zen4 = wanted("llvm -mcpu=znver4 -threads=2");
  EXPECT_EQ(names(zen4.logs), std::vector<std::string>{"b-zen4.log"});
  EXPECT_EQ(zen4.cpu, "znver4");
  ASSERT_EQ(zen4.records.size(), 1u);
  EXPECT_EQ(zen4.records[0].result.costs, std::vector<double>{3e-3});

  const ShippedRecords skylake = wanted("llvm -mcpu=skylake-avx512 -threads=2");  // its own CPU's
  EXPECT_EQ(names(skylake.logs), std::vector<std::string>{"c-skylake.log"});
  // Another Intel CPU: the first Intel log, not the Zen's.
  const ShippedRecords icelake = wanted("llvm -mcpu=icelake-server -threads=2");
  EXPECT_EQ(names(icelake.logs), std::vector<std::string>{"a-xeon.log"});
  EXPECT_EQ(icelake.records.size(), 2u);
  EXPECT_EQ(icelake.cpu, "sapphirerapids");
  // A generic CPU is near none: the first log, alone.
  EXPECT_EQ(names(wanted("llvm -mcpu=x86-64-v4 -threads=2").logs), std::vector<std::string>{"a-xeon.log"});
  EXPECT_EQ(names(wanted("llvm -mcpu=znver4 -threads=1").logs), std::vector<std::string>{"d-zen4-one-thread.log"});
  EXPECT_TRUE(wanted("llvm -mcpu=znver4 -threads=3").logs.empty());
  EXPECT_EQ(warnings.str(), "");

  const std::vector<ShippedLog> listed = list_shipped(dir.file(""), warnings);
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0].cpus, std::vector<std::string>{"sapphirerapids"});
  EXPECT_EQ(listed[1].cpus, std::vector<std::string>{"znver4"});
}

TEST(ShippedLogs, CpuNearness) {
  EXPECT_EQ(cpu_nearness("znver4", "znver4"), 2);
  EXPECT_EQ(cpu_nearness("znver3", "znver4"), 1);
  EXPECT_EQ(cpu_nearness("haswell", "rocketlake"), 1);
  EXPECT_EQ(cpu_nearness("haswell", "znver3"), 0);
  EXPECT_EQ(cpu_nearness("x86-64-v3", "x86-64-v3"), 2);
  EXPECT_EQ(cpu_nearness("x86-64-v3", "haswell"), 0);
  EXPECT_EQ(cpu_nearness("", "znver3"), 0);
}

// GPU logs name no CPU: every log of the target applies, as before.
TEST(ShippedLogs, GpuLogsAllApply) {
  ScratchDir dir;
  write_records(dir.file("a.log"), {make_record("k1", "cuda -arch=sm_90", {1e-3})});
  write_records(dir.file("b.log"), {make_record("k2", "cuda -arch=sm_90", {1e-3})});
  std::ostringstream warnings;
  const ShippedRecords r = shipped_records_for(dir.file(""), target::Target::parse("cuda -arch=sm_90"), warnings);
  EXPECT_EQ(names(r.logs), (std::vector<std::string>{"a.log", "b.log"}));
  EXPECT_EQ(r.cpu, "");
}

}  // namespace
}  // namespace tessera::records
