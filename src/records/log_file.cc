#include "records/log_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <utility>

#include "support/write_file.h"
#include "tessera/error.h"

namespace tessera::records {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Writes every byte, retrying short writes and interrupted calls. When the
// disk refuses part way (full), the file is cut back to its old end: no half
// line is left for the next reader to skip.
void write_all(int fd, const std::string& bytes, const std::string& path) {
  struct stat st {};
  const off_t old_end = ::fstat(fd, &st) == 0 ? st.st_size : -1;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? errno_text() : "the disk took no more bytes";
      if (done > 0 && old_end >= 0 && S_ISREG(st.st_mode)) (void)::ftruncate(fd, old_end);
      throw Error("cannot write record log '" + path + "': " + why);
    }
    done += static_cast<size_t>(n);
  }
}

// A file that exists, is not empty and does not start with a JSON record is
// not a tuning log (a model, an artifact): appending to it would damage it.
void require_log_or_empty(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;
  if (!S_ISREG(st.st_mode))
    throw Error("record log '" + path + "' is not a regular file; give a file path for the log");
  char head[64];
  const ssize_t n = ::pread(fd, head, sizeof(head), 0);
  for (ssize_t i = 0; i < n; ++i) {
    if (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t') continue;
    if (head[i] == '{') return;
    throw Error("'" + path + "' is not a tuning log (it does not start with a JSON record); refusing to append to it");
  }
}

// Lines longer than this are damaged records (no record comes near it); they
// are skipped without being held in memory.
constexpr size_t kMaxLine = 1 << 20;
// Damaged lines warned about one by one per file; the rest are counted.
constexpr size_t kMaxWarnings = 10;

void sync(int fd, const std::string& path) {
  if (::fsync(fd) != 0) throw Error("cannot flush record log '" + path + "' to disk: " + errno_text());
}

// True when the file is non-empty and its last byte is not a newline: an
// earlier writer died mid-line.
bool ends_mid_line(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) return false;
  char last = '\n';
  return ::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
}

// Holds back the signals that end a process from the keyboard or a job
// manager (SIGINT, SIGTERM, SIGHUP, SIGQUIT) while a batch is written: a
// tuner stopped with Ctrl-C then ends after the batch, never with half a line
// on disk. (Its measurement children die with it: measure/child_process.h.)
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t held;
    sigemptyset(&held);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&held, s);
    pthread_sigmask(SIG_BLOCK, &held, &before_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t before_;
};

std::string batch_text(const std::vector<Record>& batch) {
  std::string text;
  for (const Record& r : batch) {
    text += r.to_json_line();
    text += '\n';
  }
  return text;
}

bool is_blank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

}  // namespace

RecordWriter::RecordWriter(const std::string& path) : path_(path) {
  // O_RDWR rather than O_WRONLY: the constructor reads the last byte.
  fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open record log '" + path + "' for appending: " + errno_text());
  // One writer at a time: two tuners on one log would measure every config
  // twice, and one could take the other's half-written batch for a line torn
  // by a crash. The lock lives as long as the descriptor.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK;
    const std::string why = errno_text();
    ::close(fd_);
    if (busy)
      throw Error("record log '" + path +
                  "' is being written by another tuner (wait for it to finish, or use another log)");
    throw Error("cannot lock record log '" + path + "': " + why);
  }
  try {
    require_log_or_empty(fd_, path_);
    if (ends_mid_line(fd_)) {
      write_all(fd_, "\n", path_);
      sync(fd_, path_);
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
  support::sync_parent_directory(path_);
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

RecordWriter::RecordWriter(RecordWriter&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

RecordWriter& RecordWriter::operator=(RecordWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void RecordWriter::append(const std::vector<Record>& batch) {
  if (fd_ < 0) throw Error("record log writer was moved from");
  if (batch.empty()) return;
  // Serialise everything first: a record that cannot be written (a
  // non-finite cost) throws before any byte of the batch reaches the file.
  const std::string text = batch_text(batch);
  SignalsHeld held;
  write_all(fd_, text, path_);
  sync(fd_, path_);
}

void for_each_record(const std::string& path, std::ostream& warnings, const std::function<void(Record&&)>& visit) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error("record log '" + path + "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open record log '" + path + "': " + errno_text());
  std::string line;
  size_t damaged = 0;
  for (size_t line_no = 1;; ++line_no) {
    // A bounded getline: a line past kMaxLine is read through, not kept.
    line.clear();
    bool too_long = false;
    for (int c; (c = in.get()) != EOF && c != '\n';) {
      if (line.size() < kMaxLine) line.push_back(static_cast<char>(c));
      else too_long = true;
    }
    if (!in && line.empty() && !too_long) break;
    std::string reason = too_long ? "a line of over 1 MB" : "blank line";
    if (!too_long && !is_blank(line)) {
      std::optional<Record> record;
      try {
        record = Record::from_json_line(line);
      } catch (const Error& e) {
        reason = e.what();
      }
      // Outside the try: an error thrown by the visitor is not a damaged line.
      if (record) {
        visit(std::move(*record));
        continue;
      }
    }
    if (++damaged <= kMaxWarnings)
      warnings << "warning: " << path << ':' << line_no << ": skipped damaged record (" << reason << ")\n";
    if (!in) break;
  }
  if (damaged > kMaxWarnings)
    warnings << "warning: " << path << ": skipped " << damaged - kMaxWarnings << " more damaged records\n";
  if (in.bad()) throw Error("cannot read record log '" + path + "': " + errno_text());
}

std::vector<Record> load_records(const std::string& path, std::ostream& warnings) {
  std::vector<Record> records;
  for_each_record(path, warnings, [&](Record&& r) { records.push_back(std::move(r)); });
  return records;
}

void write_records(const std::string& path, const std::vector<Record>& records) {
  support::write_file_atomically(path, batch_text(records));  // readers never see half
}

}  // namespace tessera::records
