// Writing files users keep: all or nothing, never over what is not a file.
#include "support/write_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tessera/error.h"

namespace tessera::support {
namespace {

std::string error_of(const std::string& path) {
  try {
    write_file_atomically(path, "bytes");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WriteFileAtomically, ReplacesAFileWhole) {
  const std::string path = "/tmp/tessera-write-file-" + std::to_string(getpid());
  std::ofstream(path) << "old contents, longer than the new";
  write_file_atomically(path, "new");
  std::ifstream in(path);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), "new");
  unlink(path.c_str());
}

// pick-best to /dev/full exited 0 having renamed a file over the device.
TEST(WriteFileAtomically, RefusesDevicesAndFoldersInsteadOfReplacingThem) {
  EXPECT_EQ(error_of("/dev/null"),
            "cannot write '/dev/null': it is not a regular file (a device or a pipe); give the path of a file");
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
  EXPECT_EQ(error_of("/tmp"), "cannot write '/tmp': it is a directory; give the path of a file");
}

}  // namespace
}  // namespace tessera::support
