#pragma once
// JSON from users' files (schedule files, record lines) parsed within limits.
// A hostile text gets one tessera::Error saying what is wrong, never a crash:
// nlohmann's DOM destroys and prints recursively, so nesting 100,000 deep
// overflows the stack, and a number like 1e999 throws a type the callers do
// not catch.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::support {

struct JsonLimits {
  size_t max_depth = 16;        // nested arrays and objects
  size_t max_elements = 4096;   // values in any one array or object
  size_t max_bytes = 4u << 20;  // of the whole text
};

// Throws tessera::Error with one of: "truncated: the JSON ends early",
// "not valid JSON (error at byte N)", "number out of range at byte N",
// "nested deeper than D levels", "an array or object holds more than E
// values", "longer than B bytes". It never echoes the text, which may be
// binary junk.
nlohmann::json parse_bounded_json(const std::string& text, const JsonLimits& limits = {});

}  // namespace tessera::support
