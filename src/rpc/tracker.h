#pragma once
// The tracker: the one controller that devices register with under a key
// ("1080ti", "zen4-1t") and that tuners ask for a free device of a key.
//
// Protocol. Every message is a rpc::Message (message.h): a JSON header with a
// "type", and blobs. All sockets are CURVE-authenticated (security.h).
//
// Server -> tracker (a DEALER connected to the tracker's ROUTER):
//   register  {server, key, address, public_key, slots, busy:[slot]}
//             A server of `slots` slots; each slot is one device of `key`.
//             `busy` lists slots still in a session (a server that
//             re-registers after a tracker restart). Reply: registered.
//   heartbeat {server}           every heartbeat interval. Reply: ack, or
//             unknown when the tracker does not know the server (it was
//             restarted, or dropped the server): the server registers again.
//   reserved  {server, slot, token}  the server accepted a grant (below).
//   free      {server, slot}     a slot's session ended; the slot is free.
//   bye       {server}           the server stops.
// Tracker -> server:
//   grant     {slot, token}      a tuner will open a session on `slot`
//             presenting `token`. The server answers reserved.
//   revoke    {slot, token}      the grant's tuner is gone: free the slot if
//             no session has opened on it.
//
// Tuner -> tracker (a DEALER):
//   request   {client, request, key, priority}  wants one device of `key`.
//             Requests wait, they never fail, while every device of the key
//             is busy; they are served by priority (higher first), first in
//             first out within a priority. Re-sending a request (same client
//             and request id) is harmless: it is queued once and granted once,
//             so tuners re-send pending requests to survive a tracker restart.
//             A request not re-sent for request_timeout leaves the queue (its
//             tuner died). Reply: queued {request, key, devices}, the slots of
//             the key's live servers, busy or not: 0 means none is left.
//   cancel    {client, request}  no longer wanted.
//   summary   {}                 Reply: summary {keys:[{key, total, free,
//             pending}], servers:[{server, key, address, slots, free}]}.
// Tracker -> tuner:
//   granted   {request, server, address, public_key, slot, token}
//             once the server has reserved the slot. The tuner then talks to
//             the server directly (server.h); when that session ends the
//             server, not the tuner, frees the slot, so a tuner that dies
//             frees its devices through the server's session timeout.
//
// Liveness: a server silent for heartbeat_timeout leaves the pool (its slots
// and grants with it). A grant the server does not reserve within
// heartbeat_timeout goes back to the queue's head.
#include <atomic>
#include <memory>
#include <string>

namespace tessera::rpc {

struct TrackerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 9190;                 // 0: any free port (tests)
  double heartbeat_timeout = 3.0;  // seconds of silence before a server leaves the pool
  double request_timeout = 10.0;   // seconds a queued request lives unless its tuner re-sends it
  std::string key_file;            // the fleet's key pair (security.h); empty: default_key_file()
  std::string authorized_keys;     // more public keys to accept, one per line; empty: none
};

class Tracker {
 public:
  explicit Tracker(TrackerOptions options);
  ~Tracker();
  Tracker(const Tracker&) = delete;
  Tracker& operator=(const Tracker&) = delete;

  // Binds (logging "bind to HOST:PORT") and serves until stop() or a
  // stopping signal; throws tessera::Error when it cannot bind.
  void serve(const std::atomic<bool>& stop);
  int port() const;  // the bound port, once serving

 private:
  struct State;
  TrackerOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::rpc
