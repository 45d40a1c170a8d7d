#include "rpc/security.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "rpc/log.h"
#include "tessera/error.h"

namespace tessera::rpc {

namespace {

bool is_z85_key(const std::string& s) {
  if (s.size() != 40) return false;
  uint8_t bytes[32];
  return zmq_z85_decode(bytes, s.c_str()) != nullptr;
}

}  // namespace

KeyPair generate_key_pair() {
  char public_key[41], secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0)
    throw Error(std::string("cannot generate a CURVE key pair: ") + zmq_strerror(zmq_errno()));
  return {public_key, secret_key};
}

void write_key_file(const std::string& path, const KeyPair& keys) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  // O_EXCL: never overwrite a fleet's key, which would lock every machine out.
  FILE* f = nullptr;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) f = fdopen(fd, "w");
  if (f == nullptr)
    throw Error(fmt::format("cannot create key file {}: {}", path, std::strerror(errno)));
  std::fprintf(f, "public-key %s\nsecret-key %s\n", keys.public_key.c_str(), keys.secret_key.c_str());
  if (std::fclose(f) != 0) throw Error(fmt::format("cannot write key file {}: {}", path, std::strerror(errno)));
}

KeyPair read_key_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(fmt::format("key file {}: {} (make one with `tessera rpc keygen {}`)", path, std::strerror(errno), path));
  if (!S_ISREG(st.st_mode))
    throw Error(fmt::format("key file {}: is {}, not a file (make one with `tessera rpc keygen FILE`)", path,
                            S_ISDIR(st.st_mode) ? "a directory" : "not a regular file"));
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw Error(fmt::format("key file {}: readable by others (mode {:o}); chmod 600 it", path, st.st_mode & 0777));
  std::ifstream in(path);
  KeyPair keys;
  std::string word, value;
  while (in >> word >> value) {
    if (word == "public-key") keys.public_key = value;
    else if (word == "secret-key") keys.secret_key = value;
  }
  if (!is_z85_key(keys.public_key) || !is_z85_key(keys.secret_key))
    throw Error(fmt::format("key file {}: needs a 'public-key' and a 'secret-key' line, each 40 Z85 characters", path));
  char derived[41];
  if (zmq_curve_public(derived, keys.secret_key.c_str()) != 0 || keys.public_key != derived)
    throw Error(fmt::format("key file {}: the public key is not the secret key's", path));
  return keys;
}

std::set<std::string> read_authorized_keys(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("authorized keys {}: {}", path, std::strerror(errno)));
  std::set<std::string> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    // Z85 uses '#': only a line that starts with it is a comment; words after the key are too.
    std::istringstream words(line);
    std::string key;
    if (!(words >> key) || key[0] == '#') continue;
    if (!is_z85_key(key)) throw Error(fmt::format("authorized keys {}:{}: not a 40-character Z85 public key", path, number));
    keys.insert(key);
  }
  return keys;
}

std::string default_key_file() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.tessera/rpc.key";
}

void make_curve_server(zmq::socket_t& socket, const KeyPair& keys) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, "tessera");
}

void make_curve_client(zmq::socket_t& socket, const KeyPair& keys, const std::string& server_public_key) {
  socket.set(zmq::sockopt::curve_serverkey, server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
}

Authenticator::Authenticator(zmq::context_t& context, std::set<std::string> allowed, std::string who)
    : socket_(context, zmq::socket_type::rep), allowed_(std::move(allowed)), who_(std::move(who)) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind("inproc://zeromq.zap.01");
}

void Authenticator::handle() {
  // ZAP 1.0 (ZeroMQ RFC 27): version, request id, domain, address, identity,
  // mechanism, then the credentials (CURVE: the 32-byte public key).
  std::vector<zmq::message_t> frames;
  for (;;) {
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) {
      if (frames.empty()) return;
      break;
    }
    const bool more = frame.more();
    frames.push_back(std::move(frame));
    if (!more) break;
  }
  std::string status = "400", text = "refused", request_id;
  if (frames.size() >= 6) request_id = frames[1].to_string();
  const std::string address = frames.size() >= 4 ? frames[3].to_string() : "?";
  const std::string mechanism = frames.size() >= 6 ? frames[5].to_string() : "?";
  if (mechanism == "CURVE" && frames.size() >= 7 && frames[6].size() == 32) {
    char z85[41];
    zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
    if (allowed_.count(z85)) {
      status = "200";
      text = "OK";
    } else {
      log_line(who_, fmt::format("refused a peer at {}: public key {} is not allowed", address, z85));
    }
  } else {
    log_line(who_, fmt::format("refused a peer at {}: {} is not CURVE with a key", address, mechanism));
  }
  const std::string version = "1.0";
  socket_.send(zmq::buffer(version), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
  socket_.send(zmq::str_buffer(""), zmq::send_flags::sndmore);  // user id
  socket_.send(zmq::str_buffer(""), zmq::send_flags::none);     // metadata
}

namespace {

// Starts libzmq's monitor of `watched` for `events` and connects `monitor`
// (a PAIR socket) to it. The endpoints are numbered, so unique in the
// process even while an old socket's monitor is still being torn down (a
// reconnect makes the next monitor first).
void monitor_socket(zmq::socket_t& monitor, zmq::socket_t& watched, int events) {
  static std::atomic<int> next{0};
  const std::string endpoint = fmt::format("inproc://tessera-monitor-{}", next++);
  if (zmq_socket_monitor(watched.handle(), endpoint.c_str(), events) != 0)
    throw Error(std::string("cannot monitor a socket: ") + zmq_strerror(zmq_errno()));
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(endpoint);
}

struct MonitorEvent {
  uint16_t id;
  uint32_t value;
  std::string endpoint;  // the peer's or the bound address
};

// The next pending event, or nullopt when none is pending.
std::optional<MonitorEvent> next_event(zmq::socket_t& monitor) {
  for (;;) {
    zmq::message_t event, endpoint;
    if (!monitor.recv(event, zmq::recv_flags::dontwait)) return std::nullopt;
    if (event.more()) (void)monitor.recv(endpoint, zmq::recv_flags::none);
    if (event.size() < 6) continue;
    MonitorEvent e;
    std::memcpy(&e.id, event.data(), 2);
    std::memcpy(&e.value, static_cast<const char*>(event.data()) + 2, 4);
    e.endpoint = endpoint.to_string();
    return e;
  }
}

}  // namespace

HandshakeMonitor::HandshakeMonitor(zmq::context_t& context, zmq::socket_t& watched, std::string who)
    : socket_(context, zmq::socket_type::pair), who_(std::move(who)) {
  monitor_socket(socket_, watched,
                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
}

void HandshakeMonitor::handle() {
  while (const std::optional<MonitorEvent> e = next_event(socket_)) {
    ++failures_;
    if (e->id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) continue;  // the Authenticator logged it, with the key
    const char* why = e->id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "a protocol error (not CURVE, or a bad key)"
                                                                   : "no detail";
    log_line(who_, fmt::format("refused a peer on {}: handshake failed, {} (code {:#x})", e->endpoint, why, e->value));
  }
}

ConnectHandshakeMonitor::ConnectHandshakeMonitor(zmq::context_t& context, zmq::socket_t& watched)
    : socket_(context, zmq::socket_type::pair) {
  monitor_socket(socket_, watched,
                 ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                     ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
}

void ConnectHandshakeMonitor::handle() {
  while (const std::optional<MonitorEvent> e = next_event(socket_)) {
    switch (e->id) {
      case ZMQ_EVENT_CONNECTED:
        connected_ = true, handshaken_ = false;
        break;
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        handshaken_ = true, refusals_ = 0;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        ++refusals_, why_ = "it does not allow this public key", connected_ = false;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        ++refusals_, why_ = "the CURVE handshake failed (it holds another key)", connected_ = false;
        break;
      case ZMQ_EVENT_DISCONNECTED:
        // Dropped mid-handshake: a CURVE server cannot open a hello sealed
        // for another public key, and hangs up.
        if (connected_ && !handshaken_) ++refusals_, why_ = "it hangs up during the CURVE handshake (another key)";
        connected_ = false;
        break;
      default:
        break;
    }
  }
}

}  // namespace tessera::rpc
