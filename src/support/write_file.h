#pragma once
// Writing a file the user keeps (an artifact, an array, a picked log) so that
// a crash or a full disk never leaves half a file under its name, and so that
// no command overwrites the file it was given to read.
#include <string>
#include <string_view>

namespace tessera::support {

// Writes `bytes` to a temporary beside `path`, flushes it to disk and renames
// it into place: `path` holds either its old contents or all of `bytes`.
// Throws tessera::Error "cannot write 'PATH': REASON" (the old file untouched),
// also when `path` is a directory, a device or a pipe (which a rename would
// replace).
void write_file_atomically(const std::string& path, std::string_view bytes, unsigned mode = 0644);

// Makes the directory entry of `path` durable (fsync of its folder): fsync of
// a new or renamed file alone does not guarantee it is found after a crash.
// Best effort: the file's own bytes are synced by whoever wrote them.
void sync_parent_directory(const std::string& path);

// Throws tessera::Error when `output` is the file `input` (the same path, or
// the same file under another name): "--output 'a.tsr' is the input
// artifact; refusing to overwrite it". `what` names the input ("artifact").
// Also refuses "-" (standard output is not a file these commands write).
void refuse_to_overwrite(const std::string& output, const std::string& input, const std::string& what,
                         const std::string& flag = "--output");

}  // namespace tessera::support
