#include "support/write_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::support {

void sync_parent_directory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  ::fsync(dfd);
  ::close(dfd);
}

void write_file_atomically(const std::string& path, std::string_view bytes, unsigned mode) {
  // Renaming over a device (/dev/full), a pipe or a folder would replace it
  // with a regular file (as root, the device itself) and report success.
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode))
    throw Error("cannot write " + quoted(path) + ": it is " +
                (S_ISDIR(existing.st_mode) ? "a directory" : "not a regular file (a device or a pipe)") +
                "; give the path of a file");
  // A temporary of its own (two writers of one output must not share one);
  // close-on-exec, as measuring forks children.
  std::string temp = path + ".XXXXXX";
  const int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) throw Error("cannot write " + quoted(path) + ": cannot create a file beside it: " + std::strerror(errno));
  size_t done = 0;
  int error = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, static_cast<mode_t>(mode));
  if (!error && fsync(fd) != 0) error = errno;
  if (close(fd) != 0 && !error) error = errno;
  if (!error && rename(temp.c_str(), path.c_str()) != 0) error = errno;
  if (error) {
    unlink(temp.c_str());
    throw Error("cannot write " + quoted(path) + ": " + std::strerror(error));
  }
  sync_parent_directory(path);
}

void refuse_to_overwrite(const std::string& output, const std::string& input, const std::string& what,
                         const std::string& flag) {
  if (output == "-")
    throw Error(flag + " -: writing to standard output is not supported; give a file name");
  std::error_code ec;
  const bool same = output == input || std::filesystem::equivalent(output, input, ec);
  if (same) throw Error(flag + " " + quoted(output) + " is the input " + what + "; refusing to overwrite it");
}

}  // namespace tessera::support
