// tessera: the command line of Tessera. One verb per file beside this one:
//   tessera op        compile, check and time one operator (op_command.h)
//   tessera tune-op   tune one operator with an AutoTVM template (tune_command.h)
//   tessera tune      tune every task of a network, then time it (network_tune_command.h)
//   tessera records   pick-best / show of tuning logs (records_command.h)
//   tessera compile | run | bench | show   whole networks (model_command.h)
//   tessera autoschedule sketches   the auto-scheduler's sketches of an operator (autoschedule_command.h)
//   tessera rpc keygen | tracker | server | query   measuring on many devices (rpc_command.h)
//   tessera report    one HTML page of a tuning run and a model (report_command.h)
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "autoschedule_command.h"
#include "model_command.h"
#include "network_tune_command.h"
#include "op_command.h"
#include "records_command.h"
#include "report_command.h"
#include "rpc_command.h"
#include "tessera/error.h"
#include "tune_command.h"

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{"Tessera, an auto-tuning deep-learning compiler", "tessera"};
  app.require_subcommand(1);
  // Parse errors read like every other error of the tool.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("tessera: error: {} (run with --help for usage)\n", e.what());
  });
  cli::OpCommandOptions op_options;
  cli::TuneCommandOptions tune_options;
  cli::RecordsCommandOptions records_options;
  cli::ModelCommandOptions model_options;
  cli::NetworkTuneOptions network_tune_options;
  cli::AutoscheduleCommandOptions autoschedule_options;
  cli::RpcCommandOptions rpc_options;
  cli::ReportCommandOptions report_options;
  CLI::App* op = cli::add_op_command(app, op_options);
  CLI::App* tune = cli::add_tune_command(app, tune_options);
  CLI::App* records = cli::add_records_command(app, records_options);
  CLI::App* report = cli::add_report_command(app, report_options);
  const cli::ModelCommands model = cli::add_model_commands(app, model_options);
  CLI::App* network_tune = cli::add_network_tune_command(app, network_tune_options);
  const cli::AutoscheduleCommands autoschedule = cli::add_autoschedule_commands(app, autoschedule_options);
  const cli::RpcCommands rpc =
      cli::add_rpc_commands(*app.add_subcommand("rpc", "measure on many devices: tracker, servers, query, keys"), rpc_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help is a success, any other a plain failure
  }
  try {
    if (op->parsed()) return cli::run_op(op_options);
    if (tune->parsed()) return cli::run_tune(tune_options);
    if (records->parsed()) return cli::run_records(*records, records_options);
    if (report->parsed()) return cli::run_report(report_options, argc, argv);
    if (network_tune->parsed()) return cli::run_network_tune(network_tune_options);
    if (model.compile->parsed()) return cli::run_compile(model_options);
    if (model.run->parsed()) return cli::run_model(model_options);
    if (model.bench->parsed()) return cli::run_bench(model_options);
    if (model.show->parsed()) return cli::run_show(model_options);
    if (autoschedule.sketches->parsed()) return cli::run_sketches(autoschedule_options);
    if (cli::parsed(rpc)) return cli::run_rpc(rpc, rpc_options);
  } catch (const Error& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // a bug rather than bad input, but still one line
    std::fprintf(stderr, "tessera: error: internal: %s\n", e.what());
    return 1;
  }
  return 0;
}
