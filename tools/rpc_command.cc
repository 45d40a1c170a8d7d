#include "rpc_command.h"

#include <csignal>
#include <cstdio>

#include <fmt/format.h>

#include "flag_checks.h"
#include "rpc/security.h"
#include "rpc/tracker_client.h"

namespace tessera::cli {

namespace {

std::atomic<bool> g_stop{false};  // set by SIGINT / SIGTERM: the tracker and server stop cleanly

extern "C" void on_stop_signal(int) { g_stop = true; }

void stop_on_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void add_key_flags(CLI::App* cmd, std::string& key_file, std::string* authorized) {
  cmd->add_option("--key-file", key_file, "the fleet's key pair (`tessera rpc keygen`; default ~/.tessera/rpc.key)");
  if (authorized)
    cmd->add_option("--authorized-keys", *authorized, "a file of more public keys to accept, one per line");
}

}  // namespace

RpcCommands add_rpc_commands(CLI::App& parent, RpcCommandOptions& o) {
  CLI::App* rpc = &parent;
  rpc->require_subcommand(1);
  RpcCommands c;
  c.keygen = rpc->add_subcommand("keygen", "make the fleet's CURVE key pair; copy the file to every machine");
  c.keygen->add_option("path", o.key_path, "where to write it (default ~/.tessera/rpc.key); never overwritten");

  c.tracker = rpc->add_subcommand("tracker", "the controller devices register with and tuners ask for devices");
  c.tracker->add_option("--host", o.tracker.host, "address to bind (loopback unless told otherwise)")->capture_default_str();
  c.tracker->add_option("--port", o.tracker.port, "port to bind (0: any)")->check(CLI::Range(0, 65535))->capture_default_str();
  c.tracker->add_option("--heartbeat-timeout", o.tracker.heartbeat_timeout,
                        "seconds of silence before a server leaves the pool")
      ->check(positive_seconds)
      ->capture_default_str();
  c.tracker->add_option("--request-timeout", o.tracker.request_timeout,
                        "seconds a queued request lives unless its tuner sends it again (tuners do every 2 s)")
      ->check(positive_seconds)
      ->capture_default_str();
  add_key_flags(c.tracker, o.tracker.key_file, &o.tracker.authorized_keys);

  c.server = rpc->add_subcommand("server", "one machine's devices: registers with the tracker, measures uploads");
  c.server->add_option("--tracker", o.server.tracker, "the tracker, HOST:PORT")
      ->check(host_and_port)
      ->capture_default_str();
  c.server->add_option("--key", o.server.key, "the device key tuners ask for (e.g. zen4-1t)")->required();
  c.server->add_option("--slots", o.server.slots, "devices of this server; each measures one kernel at a time")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  c.server->add_option("--cores", o.server.cores, "CPUs to run on, split evenly over the slots (e.g. 0,1)")
      ->delimiter(',');
  c.server->add_option("--device", o.server.device,
                       "what the slots are: cpu (kernels run here), or vta-sim (VTA programs run on its simulator)")
      ->check(CLI::IsMember({"cpu", "vta-sim"}))
      ->capture_default_str();
  c.server->add_option("--host", o.server.host, "address tuners reach this server at (binds there)")->capture_default_str();
  c.server->add_option("--port", o.server.port, "port to bind (0: any)")->check(CLI::Range(0, 65535))->capture_default_str();
  c.server->add_option("--session-timeout", o.server.session_timeout,
                       "seconds a silent tuner keeps a slot before it goes back to the pool")
      ->check(positive_seconds)
      ->capture_default_str();
  c.server->add_option("--heartbeat-interval", o.server.heartbeat_interval, "seconds between heartbeats")
      ->check(positive_seconds)
      ->capture_default_str();
  add_key_flags(c.server, o.server.key_file, &o.server.authorized_keys);

  c.query = rpc->add_subcommand("query", "the tracker's queue status: devices per key, free, pending requests");
  c.query->add_option("--host", o.query_host, "the tracker's host")->capture_default_str();
  c.query->add_option("--port", o.query_port, "the tracker's port")->check(CLI::Range(1, 65535))->capture_default_str();
  c.query->add_option("--timeout", o.query_timeout, "seconds to wait for the answer")
      ->check(positive_seconds)
      ->capture_default_str();
  add_key_flags(c.query, o.query_key_file, nullptr);
  return c;
}

bool parsed(const RpcCommands& c) {
  return c.keygen->parsed() || c.tracker->parsed() || c.server->parsed() || c.query->parsed();
}

int run_rpc(const RpcCommands& c, const RpcCommandOptions& o) {
  if (c.keygen->parsed()) {
    const std::string path = o.key_path.empty() ? rpc::default_key_file() : o.key_path;
    const rpc::KeyPair keys = rpc::generate_key_pair();
    rpc::write_key_file(path, keys);
    fmt::print("wrote {} (public key {}); copy it to every machine of the fleet, mode 600\n", path, keys.public_key);
    return 0;
  }
  if (c.query->parsed()) {
    const auto keys = rpc::read_key_file(o.query_key_file.empty() ? rpc::default_key_file() : o.query_key_file);
    fmt::print("{}", rpc::format_queue_status(rpc::query_tracker(fmt::format("{}:{}", o.query_host, o.query_port), keys, o.query_timeout)));
    return 0;
  }
  stop_on_signals();
  if (c.tracker->parsed()) {
    rpc::Tracker tracker(o.tracker);
    tracker.serve(g_stop);
  } else {
    rpc::Server server(o.server);
    server.serve(g_stop);
  }
  return 0;
}

}  // namespace tessera::cli
