#pragma once
// tessera rpc keygen | tracker | server | query: measuring on many devices
// (src/rpc/). The tracker and servers run until Ctrl-C or SIGTERM. The same
// verbs make `tessera-rpc` (tools/standalone/), the device side linked
// against the runtime alone.
#include <CLI/CLI.hpp>

#include "rpc/server.h"
#include "rpc/tracker.h"

namespace tessera::cli {

struct RpcCommandOptions {
  std::string key_path;  // keygen: where to write
  rpc::TrackerOptions tracker;
  rpc::ServerOptions server;
  std::string query_host = "127.0.0.1";
  int query_port = 9190;
  std::string query_key_file;
  double query_timeout = 5;
};

struct RpcCommands {
  CLI::App *keygen, *tracker, *server, *query;
};

// Adds the four verbs under `parent` (`tessera rpc`, or `tessera-rpc` itself).
RpcCommands add_rpc_commands(CLI::App& parent, RpcCommandOptions& options);
bool parsed(const RpcCommands& commands);
int run_rpc(const RpcCommands& commands, const RpcCommandOptions& options);

}  // namespace tessera::cli
