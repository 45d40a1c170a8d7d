// Questions asked in a forked child: the answer comes back whole (binary
// included), and a child that dies or hangs is one line saying so.
#include "support/forked_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tessera::support {
namespace {

TEST(ForkedProbe, TheChildsAnswerComesBackWhole) {
  const pid_t parent = ::getpid();
  std::string binary(100000, 'x');
  binary[7] = '\0';
  const ProbeAnswer a = ask_in_forked_child(
      [&] { return ::getpid() != parent ? binary : std::string("asked in the parent"); }, "a test");
  EXPECT_TRUE(a.answered) << a.text;
  EXPECT_EQ(a.text, binary);
}

TEST(ForkedProbe, AChildThatDiesIsOneLine) {
  const ProbeAnswer a = ask_in_forked_child([]() -> std::string { std::abort(); }, "a dying question");
  EXPECT_FALSE(a.answered);
  EXPECT_NE(a.text.find("asking a dying question (process "), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("the child died"), std::string::npos) << a.text;
}

TEST(ForkedProbe, AChildThatHangsIsKilled) {
  const ProbeAnswer a = ask_in_forked_child(
      []() -> std::string {
        ::pause();
        return "";
      },
      "a hanging question", 300);
  EXPECT_FALSE(a.answered);
  EXPECT_NE(a.text.find("no answer within 300 ms"), std::string::npos) << a.text;
}

}  // namespace
}  // namespace tessera::support
