#pragma once
// tessera rpc keygen | tracker | server | query: measuring on many devices
// (src/rpc/). The tracker and servers run until Ctrl-C or SIGTERM.
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
};

struct RpcCommands {
  CLI::App *keygen, *tracker, *server, *query;
};

RpcCommands add_rpc_commands(CLI::App& app, RpcCommandOptions& options);
int run_rpc(const RpcCommands& commands, const RpcCommandOptions& options);

}  // namespace tessera::cli
