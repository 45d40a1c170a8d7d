#include "autotvm/config_features.h"

#include <algorithm>
#include <cmath>

#include "features/loop_features.h"
#include "tessera/error.h"
#include "tir/lower.h"

namespace tessera::autotvm {
namespace {

float annotation_code(const std::string& a) {
  if (a == "unroll") return 1;
  if (a == "vec") return 2;
  if (a == "parallel") return 3;
  return 0;
}

size_t loop_feature_length(FeatureType type) {
  return type == FeatureType::Itervar ? features::kItervarLength : features::kCurveLength;
}

}  // namespace

std::vector<float> knob_features(const ConfigSpace& space, const ConfigEntity& config) {
  std::vector<float> out;
  const auto& knobs = space.knobs();
  for (size_t k = 0; k < knobs.size() && k < config.choices().size(); ++k) {
    const int choice = config.choices()[k];
    const nlohmann::json& v = knobs[k].candidates.at(choice);
    switch (knobs[k].kind) {
      case KnobKind::Split:
        for (const auto& part : v) out.push_back(std::log2(std::max<double>(1.0, part.get<double>())));
        break;
      case KnobKind::Reorder:
        for (const auto& pos : v) out.push_back(pos.get<float>());
        break;
      case KnobKind::Annotate:
        for (const auto& a : v) out.push_back(a.is_string() ? annotation_code(a.get<std::string>()) : 0.0f);
        break;
      case KnobKind::Other:
        if (v.is_number())
          out.push_back(v.get<float>());
        else if (v.is_boolean())
          out.push_back(v.get<bool>() ? 1.0f : 0.0f);
        else
          out.push_back(static_cast<float>(choice));
        break;
    }
  }
  return out;
}

std::vector<float> loop_features(const measure::MeasureInput& input, FeatureType type) {
  if (type == FeatureType::Knob) throw Error("loop_features: knob features need a config space, not a trace");
  tir::LoweredFunc f;
  try {
    f = tir::lower(input.dag, input.trace);
  } catch (const std::exception&) {
    return std::vector<float>(loop_feature_length(type), 0.0f);  // the measurement will fail too
  }
  return type == FeatureType::Itervar ? features::itervar_features(f) : features::curve_features(f);
}

std::vector<float> config_features(const Task& task, const ConfigEntity& config, FeatureType type) {
  if (type == FeatureType::Knob) return knob_features(task.space, config);
  measure::MeasureInput input;
  try {
    input = task.measure_input(config);
  } catch (const std::exception&) {
    return std::vector<float>(loop_feature_length(type), 0.0f);
  }
  return loop_features(input, type);
}

}  // namespace tessera::autotvm
