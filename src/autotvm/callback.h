#pragma once
// Callbacks for Tuner::tune: the progress line users know from TVM, and the
// tuning log. Both are plain Callbacks; tune() calls every callback once more
// with an empty batch when it finishes, which is when the progress line says
// " Done.".
#include <iostream>
#include <string>
#include <vector>

#include "autotvm/tuner.h"
#include "records/record.h"

namespace tessera::autotvm {

// After every batch:
//   [Task  1/12]  Current/Best:  541.83/3570.66 GFLOPS | Progress: (960/2000) |
//   1001.31 s | ETA 1084 s
// (prefix "[Task  1/12] "; Current = the batch's last valid config, Best = the
// tuner's best; seconds since the callback was made; ETA = the time left at the
// pace so far, an upper bound when early stopping ends the run sooner). At the
// end the line is written once more without the ETA, followed by " Done.".
// When `out` is std::cout or std::cerr on a terminal the line is rewritten in
// place ('\r'); otherwise every batch adds a plain line.
Callback progress_bar(int total_trials, std::string prefix = "", std::ostream& out = std::cout);

// Appends one records::Record per measurement to `path` (created if absent),
// each batch written and flushed to disk before tuning goes on, so a run
// killed at any moment loses at most the batch in flight. Throws
// tessera::Error naming the path when it cannot be opened. Each batch, once
// on disk, is also appended to `written` when given (a caller that keeps the
// log in memory need not read it back).
Callback log_to_file(const std::string& path, std::vector<records::Record>* written = nullptr);

}  // namespace tessera::autotvm
