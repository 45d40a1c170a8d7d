#pragma once
// An RPC server: one machine's devices. It registers its slots with the
// tracker under a key (tracker.h) and measures the kernels tuners upload,
// under exactly the LocalRunner protocol (measure/isolated_run.h): a child
// process per measurement, number / repeat / min_repeat_ms / cache flush, the
// output checked against the expected one the tuner sent. It needs no
// compiler: only the loader of the runtime.
//
// Session protocol (a tuner's DEALER to the server's ROUTER, CURVE):
//   run    {token, job, name, function, inputs:[shape], outputs:[shape],
//           options:{number, repeat, min_repeat_ms, timeout, flush_cache,
//           check, tolerance, threads}} + blob object [+ blob expected]
//          `token` is the tracker's grant for one slot; `name` the object's
//          file name (letters, digits, '.', '_', '-'; no path). The server
//          answers accepted {job}, then running {job} every second while the
//          kernel runs (a silent server is a dead one), then
//          result {job, result:{costs, error, error_message, all_cost}}; or
//          refused {job, reason} at once for a bad job or an unknown token.
//   close  {token}   the session ends; the slot goes back to the tracker.
// A session silent for session_timeout ends by itself.
//
// A server whose device is "vta-sim" measures VTA programs instead (a job
// whose function is kVtaProgram (rpc/job.h), its object a program as measure/
// vta_measure.h writes it): its cost is the simulated time, so a fleet of
// simulators tunes seed 003's conv2d_packed.vta tasks in parallel.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace tessera::rpc {

inline constexpr const char* kVtaSimulator = "vta-sim";   // ServerOptions::device

struct ServerOptions {
  std::string tracker = "127.0.0.1:9190";  // HOST:PORT
  std::string key;                         // the device key tuners ask for
  std::string host = "127.0.0.1";          // where tuners reach this server: loopback unless told otherwise
  int port = 0;                            // 0: any free port
  int slots = 1;                           // devices; each measures one kernel at a time
  std::string device = "cpu";              // what the slots are: "cpu", or kVtaSimulator
  std::vector<int> cores;                  // CPUs, split evenly over the slots; empty: any
  double heartbeat_interval = 1.0;         // seconds between heartbeats to the tracker
  double session_timeout = 10.0;           // a session or an unused grant silent this long ends
  double max_run_seconds = 600;            // the longest timeout a tuner may ask for
  size_t max_upload_bytes = 64u << 20;     // largest object file or expected output
  std::string work_dir;                    // where uploads go; empty: a fresh temporary directory
  std::string key_file;                    // the fleet's key pair; empty: default_key_file()
  std::string authorized_keys;             // more public keys to accept
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until `stop`; throws tessera::Error when it cannot start.
  void serve(const std::atomic<bool>& stop);

 private:
  struct State;
  ServerOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::rpc
