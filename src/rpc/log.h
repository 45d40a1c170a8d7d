#pragma once
// The RPC processes' log: one line per event on stderr, "HH:MM:SS who: text",
// whole lines even when threads log at once.
#include <string>

namespace tessera::rpc {

void log_line(const std::string& who, const std::string& text);

}  // namespace tessera::rpc
