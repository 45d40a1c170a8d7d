#include "vta/config.h"

#include <nlohmann/json.hpp>

#include "tessera/error.h"

namespace tessera::vta {

namespace {

// The integer fields with their vta_config.json keys, the one list both directions use.
template <typename Config, typename Visit>
void for_each_field(Config& c, Visit&& visit) {
  visit("LOG_INP_WIDTH", c.log_inp_width);
  visit("LOG_WGT_WIDTH", c.log_wgt_width);
  visit("LOG_ACC_WIDTH", c.log_acc_width);
  visit("LOG_BATCH", c.log_batch);
  visit("LOG_BLOCK", c.log_block);
  visit("LOG_UOP_BUFF_SIZE", c.log_uop_buff_size);
  visit("LOG_INP_BUFF_SIZE", c.log_inp_buff_size);
  visit("LOG_WGT_BUFF_SIZE", c.log_wgt_buff_size);
  visit("LOG_ACC_BUFF_SIZE", c.log_acc_buff_size);
  visit("HW_FREQ", c.hw_freq_mhz);
}

}  // namespace

std::string VtaConfig::to_json() const {
  nlohmann::json j = {{"TARGET", target}, {"HW_VER", "0.0.2"}};
  for_each_field(*this, [&](const char* key, int value) { j[key] = value; });
  return j.dump(2);
}

VtaConfig VtaConfig::from_json(const std::string& text, const std::string& where) {
  VtaConfig c;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw Error(where + ": a VTA configuration is a JSON object of its LOG_* sizes");
  if (j.contains("TARGET")) {
    if (!j["TARGET"].is_string()) throw Error(where + ": TARGET must be a string");
    c.target = j["TARGET"].get<std::string>();
  }
  for_each_field(c, [&](const char* key, int& value) {
    if (!j.contains(key)) return;  // the default's
    if (!j[key].is_number_integer()) throw Error(where + ": " + key + " must be an integer");
    const int64_t v = j[key].get<int64_t>();
    if (v < 0 || v > (std::string(key) == "HW_FREQ" ? 10000 : 30)) throw Error(where + ": " + key + " = " + std::to_string(v) + " is out of range");
    value = static_cast<int>(v);
  });
  c.validate(where);
  return c;
}

void VtaConfig::validate(const std::string& where) const {
  if (hw_freq_mhz < 1) throw Error(where + ": HW_FREQ (MHz) must be positive");
  if (log_inp_width != 3 || log_wgt_width != 3)
    throw Error(where +
                ": inputs and weights are 8-bit (LOG_INP_WIDTH = LOG_WGT_WIDTH = 3); this simulator "
                "computes no other width");
  if (log_acc_width != 5) throw Error(where + ": accumulators are 32-bit (LOG_ACC_WIDTH = 5)");
  if (log_block < 1 || log_block > 6) throw Error(where + ": LOG_BLOCK must be 1..6 (blocks of 2 to 64)");
  if (log_batch > 4) throw Error(where + ": LOG_BATCH must be 0..4");
  const auto check = [&](const char* key, int log_size, int64_t element) {
    if ((int64_t{1} << log_size) < element)
      throw Error(where + ": " + key + " = " + std::to_string(log_size) + " holds no element of " +
                  std::to_string(element) + " bytes");
  };
  check("LOG_INP_BUFF_SIZE", log_inp_buff_size, inp_element_bytes());
  check("LOG_WGT_BUFF_SIZE", log_wgt_buff_size, wgt_element_bytes());
  check("LOG_ACC_BUFF_SIZE", log_acc_buff_size, acc_element_bytes());
  check("LOG_UOP_BUFF_SIZE", log_uop_buff_size, kUopBytes);
  // A micro-op packs its three indices in 32 bits: 11 for the accumulator, 11
  // for the input, 10 for the weight buffer.
  if (acc_depth() > (1 << 11) || inp_depth() > (1 << 11) || wgt_depth() > (1 << 10))
    throw Error(where +
                ": buffers deeper than a micro-op's indices reach (2048 accumulator and input tiles, 1024 "
                "weight tiles)");
}

}  // namespace tessera::vta
