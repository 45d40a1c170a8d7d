#pragma once
// A tuner's, or a query's, side of the tracker protocol (tracker.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "rpc/message.h"
#include "rpc/security.h"

namespace tessera::rpc {

// tessera::Error naming `tracker` unless it is HOST:PORT with a port from 1
// to 65535 and a host that resolves. Checked once, before connecting: libzmq
// would retry an unresolvable host silently, which a user sees as a timeout.
void check_tracker_address(const std::string& tracker);

// A CURVE-authenticated DEALER connected to the tracker at HOST:PORT.
std::unique_ptr<zmq::socket_t> connect_to_tracker(zmq::context_t& context, const std::string& tracker,
                                                  const KeyPair& keys);

struct KeyStatus {
  std::string key;
  int64_t total = 0, free = 0, pending = 0;
};

// Asks the tracker for its queue status; tessera::Error naming the tracker
// when it does not answer within `timeout` seconds.
std::vector<KeyStatus> query_tracker(const std::string& tracker, const KeyPair& keys, double timeout = 5);

// The seed's table:
//   Queue Status
//   ----------------------------------
//   key          total  free  pending
//   ----------------------------------
//   1080ti       4      4     0
//   ----------------------------------
std::string format_queue_status(const std::vector<KeyStatus>& keys);

}  // namespace tessera::rpc
