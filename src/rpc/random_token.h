#pragma once
// Unguessable identifiers: grant tokens, server and client ids.
#include <string>

namespace tessera::rpc {

// 32 hex digits from the system's random source.
std::string random_token();

}  // namespace tessera::rpc
