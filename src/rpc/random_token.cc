#include "rpc/random_token.h"

#include <random>

#include <fmt/format.h>

namespace tessera::rpc {

std::string random_token() {
  static thread_local std::random_device device;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", device());
  return token;
}

}  // namespace tessera::rpc
