#pragma once
// Records for tests, and a scratch folder removed when the test ends.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "records/record.h"

namespace tessera::records::testing {

inline Record make_record(const std::string& key, const std::string& target, std::vector<double> costs,
                          measure::ErrorKind error = measure::ErrorKind::None, double timestamp = 1.7e9) {
  Record r;
  r.workload_key = key;
  r.task_name = "dense";
  r.workload = {{"M", 64}, {"N", 64}, {"K", 64}};
  r.target = target;
  r.result.costs = std::move(costs);
  r.result.error = error;
  r.result.all_cost = 0.25;
  r.result.timestamp = timestamp;
  return r;
}

class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-records-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tessera::records::testing
