#pragma once
// A builder that builds nothing and reports success: for tests whose runner
// is fake too, so that what is tested is the search and its log, not code
// generation.
#include <vector>

#include "measure/builder.h"

namespace tessera::testing {

class FakeBuilder : public measure::Builder {
 public:
  std::vector<measure::BuildResult> build(const std::vector<measure::MeasureInput>& inputs) override {
    return std::vector<measure::BuildResult>(inputs.size());
  }
};

}  // namespace tessera::testing
