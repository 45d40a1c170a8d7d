// Key files and the framing every RPC socket shares.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "rpc/message.h"
#include "rpc/security.h"
#include "rpc/tracker_client.h"
#include "tessera/error.h"

namespace tessera::rpc {
namespace {

std::string temp_path(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("tessera-security-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove(p);
  return p.string();
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(RpcSecurity, AKeyFileRoundTripsIsPrivateAndIsNeverOverwritten) {
  const std::string path = temp_path("fleet.key");
  const KeyPair keys = generate_key_pair();
  EXPECT_EQ(keys.public_key.size(), 40u);
  write_key_file(path, keys);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const KeyPair back = read_key_file(path);
  EXPECT_EQ(back.public_key, keys.public_key);
  EXPECT_EQ(back.secret_key, keys.secret_key);
  expect_error([&] { write_key_file(path, generate_key_pair()); }, path);
  ::chmod(path.c_str(), 0644);
  expect_error([&] { read_key_file(path); }, "readable by others");
  std::filesystem::remove(path);
}

TEST(RpcSecurity, BadKeyFilesNameThemselves) {
  expect_error([] { read_key_file("/nonexistent/rpc.key"); }, "tessera rpc keygen");
  const std::string path = temp_path("bad.key");
  {
    std::ofstream out(path);
    out << "public-key abc\nsecret-key def\n";
  }
  ::chmod(path.c_str(), 0600);
  expect_error([&] { read_key_file(path); }, "40 Z85 characters");
  std::filesystem::remove(path);
  const KeyPair a = generate_key_pair(), b = generate_key_pair();
  write_key_file(path, {a.public_key, b.secret_key});
  expect_error([&] { read_key_file(path); }, "not the secret key's");
  std::filesystem::remove(path);
}

TEST(RpcSecurity, AuthorizedKeysSkipCommentsAndRefuseJunk) {
  const std::string path = temp_path("authorized");
  const KeyPair a = generate_key_pair();
  {
    std::ofstream out(path);
    out << "# the lab's machines\n\n  " << a.public_key << "  rack 3\n";
  }
  EXPECT_EQ(read_authorized_keys(path), std::set<std::string>{a.public_key});
  {
    std::ofstream out(path, std::ios::app);
    out << "not-a-key\n";
  }
  expect_error([&] { read_authorized_keys(path); }, ":4: not a 40-character");
  std::filesystem::remove(path);
}

TEST(RpcMessage, ReceiveChecksFramesAndHeaders) {
  zmq::context_t context;
  zmq::socket_t in(context, zmq::socket_type::pair), out(context, zmq::socket_type::pair);
  in.bind("inproc://message-test");
  out.connect("inproc://message-test");
  auto roundtrip = [&](const std::vector<std::string>& frames) {
    for (size_t f = 0; f < frames.size(); ++f)
      out.send(zmq::buffer(frames[f]), f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    return receive(in, false, 100);
  };
  Received r = roundtrip({"{\"type\":\"summary\",\"n\":1}", "blob"});
  ASSERT_TRUE(r.message) << r.error;
  EXPECT_EQ(r.message->type(), "summary");
  EXPECT_EQ(r.message->blobs, std::vector<std::string>{"blob"});
  EXPECT_NE(roundtrip({"{\"type\":1}"}).error.find("field 'type'"), std::string::npos);
  EXPECT_NE(roundtrip({"[1]"}).error.find("not a JSON object"), std::string::npos);
  EXPECT_NE(roundtrip({"\x01\x02"}).error.find("bad header"), std::string::npos);
  EXPECT_NE(roundtrip({"{\"type\":\"x\"}", std::string(101, 'b')}).error.find("the limit is 100"), std::string::npos);
  EXPECT_NE(roundtrip({"{\"type\":\"x\"}", "a", "b", "c"}).error.find("too many frames"), std::string::npos);
  // After each bad message the next good one still arrives whole.
  r = roundtrip({"{\"type\":\"ok\"}"});
  ASSERT_TRUE(r.message) << r.error;
  EXPECT_EQ(r.message->type(), "ok");
  EXPECT_TRUE(receive(in, false, 100).empty());
}

}  // namespace
}  // namespace tessera::rpc
