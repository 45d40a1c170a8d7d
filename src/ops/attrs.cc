#include "ops/attrs.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "tessera/error.h"

namespace tessera::ops {
namespace {

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  std::string shown = status == 0 && text ? text.get() : name;
  const std::string ours = "tessera::ops::";
  return shown.rfind(ours, 0) == 0 ? shown.substr(ours.size()) : shown;
}

}  // namespace

void Attrs::throw_not(const char* expected) const {
  const std::string held = held_ ? demangled(held_->type().name()) : "no attributes";
  throw Error("attributes are " + held + ", expected " + demangled(expected));
}

}  // namespace tessera::ops
