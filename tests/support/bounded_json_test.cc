// Parsing within limits: what a hostile text gets is one Error, never a crash.
#include "support/bounded_json.h"

#include <gtest/gtest.h>

#include "support/checked_math.h"
#include "tessera/error.h"

namespace tessera::support {
namespace {

std::string error_of(const std::string& text, const JsonLimits& limits = {}) {
  try {
    parse_bounded_json(text, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BoundedJson, ParsesWhatIsWithinTheLimits) {
  const auto j = parse_bounded_json(R"({"a": [1, 2, {"b": null}], "c": "d"})");
  EXPECT_EQ(j.at("a").size(), 3u);
  EXPECT_EQ(j.at("c"), "d");
}

TEST(BoundedJson, EachLimitAndDamageHasItsOwnMessage) {
  EXPECT_EQ(error_of(std::string(100000, '[') + std::string(100000, ']')), "nested deeper than 16 levels");
  EXPECT_EQ(error_of("[[[1]]]", {.max_depth = 2}), "nested deeper than 2 levels");
  EXPECT_EQ(error_of("[[[1]]]", {.max_depth = 3}), "");
  EXPECT_EQ(error_of("[1,2,3]", {.max_elements = 2}), "an array or object holds more than 2 values");
  EXPECT_EQ(error_of(R"({"a":1,"b":2,"c":3})", {.max_elements = 2}), "an array or object holds more than 2 values");
  EXPECT_EQ(error_of("[1,2,3]", {.max_bytes = 4}), "longer than 4 bytes");
  EXPECT_EQ(error_of(R"({"v":1e999})").rfind("number out of range at byte", 0), 0u) << error_of(R"({"v":1e999})");
  EXPECT_EQ(error_of(R"({"v": [1, 2)"), "truncated: the JSON ends early");
  EXPECT_EQ(error_of("hello").rfind("not valid JSON (error at byte", 0), 0u);
  EXPECT_EQ(error_of("{} {}").rfind("not valid JSON (error at byte", 0), 0u);  // one document per text
}

TEST(CheckedMath, OverflowAndHugeProductsAreErrorsNamingWhat) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20, "x"), int64_t{1} << 40);
  EXPECT_THROW(checked_mul(int64_t{1} << 32, int64_t{1} << 32, "x"), Error);
  EXPECT_THROW(checked_add(INT64_MAX, 1, "x"), Error);
  EXPECT_EQ(bounded_product({1 << 20, 1 << 20}, "shape"), int64_t{1} << 40);
  try {
    bounded_product({int64_t{1} << 32, int64_t{1} << 32}, "shape [4294967296, 4294967296]");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("shape [4294967296, 4294967296]: ", 0), 0u) << e.what();
  }
  EXPECT_THROW(bounded_product({1 << 21, 1 << 20}, "shape"), Error);
}

}  // namespace
}  // namespace tessera::support
