#pragma once
// Who may talk to whom. Every RPC socket runs ZeroMQ's CURVE mechanism
// (libzmq's, on libsodium): traffic is encrypted, and a peer proves it holds
// the secret key of the public key it presents. The tracker and the servers
// accept only public keys on their allow-list; a peer without CURVE, or with
// another key, is refused with a log line.
//
// A fleet shares one key file, made by `tessera rpc keygen` and copied to
// every machine: the tracker, the servers and the tuners all hold it, so each
// recognises the others by its public key. More keys (one per machine, say)
// can be allowed with an authorized-keys file of public keys, one per line.
#include <set>
#include <string>

#include <zmq.hpp>

namespace tessera::rpc {

struct KeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

KeyPair generate_key_pair();

// The key file: "public-key Z85" and "secret-key Z85" lines. Written with mode
// 0600; refused (tessera::Error naming the file) when it exists already.
void write_key_file(const std::string& path, const KeyPair& keys);
// tessera::Error naming the file when it is missing, malformed, or readable by others.
KeyPair read_key_file(const std::string& path);
// Public keys, the first word of each line; blank lines and lines starting
// with '#' are skipped (a Z85 key may contain '#' itself).
std::set<std::string> read_authorized_keys(const std::string& path);

// Where `tessera rpc` looks for the fleet's key file without --key-file:
// $HOME/.tessera/rpc.key.
std::string default_key_file();

// The side that binds (tracker, server's data socket): CURVE server with `keys`.
void make_curve_server(zmq::socket_t& socket, const KeyPair& keys);
// The side that connects, to a peer whose public key is `server_public_key`.
void make_curve_client(zmq::socket_t& socket, const KeyPair& keys, const std::string& server_public_key);

// The ZAP handler of one ZeroMQ context: answers libzmq's authentication
// requests for every CURVE server socket of that context. It is polled in the
// owner's loop (socket() in its poll set, handle() when readable), so no
// thread is needed. Must exist before those sockets bind.
class Authenticator {
 public:
  Authenticator(zmq::context_t& context, std::set<std::string> allowed_public_keys, std::string who);
  zmq::socket_t& socket() { return socket_; }
  // Answers one pending request; logs each refusal.
  void handle();

 private:
  zmq::socket_t socket_;
  std::set<std::string> allowed_;
  std::string who_;
};

// Logs failed handshakes of a bound socket (a peer without CURVE or with a
// bad key): its monitor is polled like the Authenticator.
class HandshakeMonitor {
 public:
  HandshakeMonitor(zmq::context_t& context, zmq::socket_t& watched, std::string who);
  zmq::socket_t& socket() { return socket_; }
  void handle();
  int failures() const { return failures_; }

 private:
  zmq::socket_t socket_;
  std::string who_;
  int failures_ = 0;
};

// Watches the handshakes of a connecting socket (a server's link to its
// tracker). A peer holding another key never answers: libzmq retries the
// connection for ever, silently, while only the peer's log says why. This
// counts the handshakes refused since the last one that succeeded, so the
// owner can stop with one clear line instead. Polled like the others.
class ConnectHandshakeMonitor {
 public:
  ConnectHandshakeMonitor(zmq::context_t& context, zmq::socket_t& watched);
  zmq::socket_t& socket() { return socket_; }
  void handle();
  int refusals_in_a_row() const { return refusals_; }
  // What the last refusal looked like from this side.
  const std::string& last_refusal() const { return why_; }

 private:
  zmq::socket_t socket_;
  bool connected_ = false, handshaken_ = false;
  int refusals_ = 0;
  std::string why_;
};

}  // namespace tessera::rpc
