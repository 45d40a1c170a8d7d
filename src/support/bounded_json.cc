#include "support/bounded_json.h"

#include <vector>

#include "tessera/error.h"

namespace tessera::support {

namespace {

using nlohmann::json;

// A first pass over the text that builds nothing: the SAX parser keeps its
// own stack, so it walks any nesting without recursion, and stops at the
// first limit crossed.
class LimitChecker : public nlohmann::json_sax<json> {
 public:
  LimitChecker(const JsonLimits& limits, size_t size) : limits_(limits), size_(size) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool key(string_t&) override { return true; }  // its value counts
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (e.id == 406)
      error_ = "number out of range at byte " + std::to_string(position);
    else if (position > size_)
      error_ = "truncated: the JSON ends early";
    else
      error_ = "not valid JSON (error at byte " + std::to_string(position) + ")";
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  bool value() {
    if (open_.empty() || ++open_.back() <= limits_.max_elements) return true;
    error_ = "an array or object holds more than " + std::to_string(limits_.max_elements) + " values";
    return false;
  }
  bool open() {
    if (!value()) return false;
    if (open_.size() >= limits_.max_depth) {
      error_ = "nested deeper than " + std::to_string(limits_.max_depth) + " levels";
      return false;
    }
    open_.push_back(0);
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  const JsonLimits& limits_;
  size_t size_;
  std::vector<size_t> open_;  // values seen so far in each open array or object
  std::string error_;
};

}  // namespace

json parse_bounded_json(const std::string& text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) throw Error("longer than " + std::to_string(limits.max_bytes) + " bytes");
  LimitChecker checker(limits, text.size());
  if (!json::sax_parse(text, &checker)) {
    throw Error(checker.error().empty() ? "not valid JSON" : checker.error());
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // Not expected after the first pass; still an Error, never a crash.
    throw Error(std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace tessera::support
