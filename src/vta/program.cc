#include "vta/program.h"

#include <fmt/format.h>

#include <cstring>

#include "tessera/error.h"

namespace tessera::vta {

namespace {

constexpr int64_t kRegionAlignment = 256;

}  // namespace

const DramRegion& Program::tensor(const std::string& name) const {
  for (const auto& [n, region] : tensors)
    if (n == name) return region;
  throw Error(fmt::format("the VTA program has no tensor named {}", name));
}

DramRegion Program::allocate(int64_t bytes) {
  const int64_t offset =
      (static_cast<int64_t>(dram.size()) + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment;
  dram.resize(offset + bytes, 0);
  return {offset, bytes};
}

void Program::write(const std::string& name, const void* bytes, int64_t size) {
  const DramRegion& r = tensor(name);
  if (size != r.bytes) throw Error(fmt::format("the VTA program's {} holds {} bytes, given {}", name, r.bytes, size));
  std::memcpy(dram.data() + r.offset, bytes, size);
}

void Program::read(const std::string& name, void* bytes, int64_t size) const {
  const DramRegion& r = tensor(name);
  if (size != r.bytes)
    throw Error(fmt::format("the VTA program's {} holds {} bytes, asked for {}", name, r.bytes, size));
  std::memcpy(bytes, dram.data() + r.offset, size);
}

}  // namespace tessera::vta
