#pragma once
// Reading and writing tuning logs: one Record per line (records/record.h).
//
// Writing appends whole batches and makes each durable before returning, so a
// tuner killed at any moment loses at most the batch in flight. Reading
// skips damaged lines with a warning naming FILE:LINE and keeps the rest.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "records/record.h"

namespace tessera::records {

class RecordWriter {
 public:
  // Opens `path` for appending, creating it, and holds it as its only writer
  // until destroyed: a second writer, in this process or another, is refused
  // with a tessera::Error saying so. If an earlier writer was killed in the
  // middle of a line, starts a fresh line so that the first new record is not
  // glued to the damaged one. Throws tessera::Error naming the path.
  explicit RecordWriter(const std::string& path);
  ~RecordWriter();
  RecordWriter(RecordWriter&& other) noexcept;
  RecordWriter& operator=(RecordWriter&& other) noexcept;
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Writes the batch with one write(), then fsyncs; SIGINT and SIGTERM wait
  // until it is complete. Throws tessera::Error naming the path when the disk
  // refuses.
  void append(const std::vector<Record>& batch);
  void append(const Record& record) { append(std::vector<Record>{record}); }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Calls `visit` with each good record of the file, in file order, printing
// `warning: FILE:LINE: skipped damaged record (REASON)` to `warnings` for each
// bad line (blank, truncated, not JSON, wrong shape, unknown version).
// Throws tessera::Error naming the path when the file cannot be opened.
void for_each_record(const std::string& path, std::ostream& warnings, const std::function<void(Record&&)>& visit);

// All good records of the file, in file order; see for_each_record.
std::vector<Record> load_records(const std::string& path, std::ostream& warnings);

// Replaces the file's contents with `records` (written to a temporary file
// in the same folder, then renamed over `path`, so readers never see half).
void write_records(const std::string& path, const std::vector<Record>& records);

}  // namespace tessera::records
