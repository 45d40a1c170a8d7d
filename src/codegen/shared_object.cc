// Linking kernel objects into shared objects with the system C compiler.
#include "codegen/shared_object.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "tessera/error.h"

namespace tessera::codegen {
namespace {

// The path quoted for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A temporary file removed when this goes out of scope.
class TempFile {
 public:
  TempFile(const std::string& bytes, const char* suffix) {
    path_ = std::string("/tmp/tessera-kernel-XXXXXX") + suffix;
    int fd = mkstemps(path_.data(), static_cast<int>(std::strlen(suffix)));
    if (fd < 0) throw Error("write_shared_object: cannot create a temporary file");
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
    if (done != bytes.size()) {
      unlink(path_.c_str());
      throw Error("write_shared_object: cannot write the temporary object file");
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

void write_shared_object(const std::vector<std::string>& objects, const std::string& path) {
  std::vector<std::unique_ptr<TempFile>> files;
  std::string command = "cc -shared -o " + shell_quote(path);
  for (const auto& object : objects) {
    files.push_back(std::make_unique<TempFile>(object, ".o"));
    command += " " + shell_quote(files.back()->path());
  }
  command += " -lm 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw Error("write_shared_object: cannot run the C compiler");
  std::array<char, 4096> chunk;
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) output.append(chunk.data(), n);
  int status = pclose(pipe);
  if (status != 0) {
    throw Error("write_shared_object: linking '" + path + "' failed: " + (output.empty() ? "cc exited with an error" : output));
  }
}

void write_shared_object(const std::string& object_bytes, const std::string& path) {
  write_shared_object(std::vector<std::string>{object_bytes}, path);
}

std::string link_shared_object(const std::vector<std::string>& objects) {
  TempFile so("", ".so");
  write_shared_object(objects, so.path());
  std::ifstream in(so.path(), std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw Error("link_shared_object: cannot read the linked library back");
  return bytes.str();
}

}  // namespace tessera::codegen
