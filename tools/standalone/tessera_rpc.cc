// tessera-rpc: the RPC verbs of `tessera rpc` (keygen, tracker, server,
// query) in a binary linked against the runtime library alone: no LLVM, no
// compiler. A device in a fleet needs this and nothing else; tuners upload
// kernels as shared objects, which the runtime's loader runs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "../rpc_command.h"
#include "tessera/error.h"

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{"Tessera's RPC tracker and device server (runtime only)", "tessera-rpc"};
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tessera-rpc: error: {} (run with --help for usage)\n", e.what());
  });
  cli::RpcCommandOptions options;
  const cli::RpcCommands commands = cli::add_rpc_commands(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    return cli::run_rpc(commands, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera-rpc: error: %s\n", e.what());
    return 1;
  }
}
