#include "vta/target_config.h"

#include "tessera/error.h"

namespace tessera::vta {

VtaConfig config_of(const target::Target& target) {
  if (target.accelerator != "vta") throw Error("target '" + target.str() + "' has no VTA accelerator");
  if (target.accelerator_config.empty()) return VtaConfig{};
  return VtaConfig::from_json(target.accelerator_config, "target '" + target.str() + "'");
}

}  // namespace tessera::vta
