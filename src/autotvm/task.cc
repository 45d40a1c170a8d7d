#include "autotvm/task.h"

#include <algorithm>

#include "tessera/error.h"

namespace tessera::autotvm {

using nlohmann::json;

std::string Task::describe() const {
  std::string s = name();
  for (const auto& p : workload.dag.placeholders()) s += " " + p->name + "=" + ops::shape_to_string(p->shape);
  if (op == "conv2d" || op == "depthwise_conv2d") {
    s += " stride=" + std::to_string(args.stride) + " dilation=" + std::to_string(args.dilation);
    s += args.padding.empty() ? " pad=" + std::to_string(args.pad) : " padding=" + ops::shape_to_string(args.padding);
  }
  if (args.bias) s += " +bias";
  if (args.relu) s += " +relu";
  return s;
}

schedule::Trace Task::instantiate(const ConfigEntity& config) const { return tmpl->apply(workload, config); }

measure::MeasureInput Task::measure_input(const ConfigEntity& config) const {
  return measure::MeasureInput{workload.dag, instantiate(config), target};
}

Task create_task(const std::string& op, const ops::OpArgs& args, const codegen::Target& target) {
  Task t;
  t.op = op;
  t.target = target;
  t.tmpl = &find_template(op, args, target);
  t.args = t.tmpl->declare(args, target);
  t.workload = ops::make_workload(op, t.args);
  t.space = t.tmpl->define_space(t.workload, target);
  return t;
}

json args_to_json(const ops::OpArgs& a) {
  return json{{"input", a.input},
              {"weight", a.weight},
              {"stride", a.stride},
              {"pad", a.pad},
              {"dilation", a.dilation},
              {"padding", a.padding},
              {"layout", a.layout},
              {"ic_bn", a.ic_bn},
              {"oc_bn", a.oc_bn},
              {"bias", a.bias},
              {"relu", a.relu},
              {"pool", a.pool},
              {"count_include_pad", a.count_include_pad},
              {"clip_min", a.clip_min},
              {"clip_max", a.clip_max},
              {"axis", a.axis}};
}

namespace {

// Reads field `key` of `j` into `out` when present; a value of the wrong type
// is an error naming the field.
template <typename T>
void read_field(const json& j, const std::string& key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  try {
    out = it->get<T>();
  } catch (const json::exception& e) {
    throw Error("op args: field '" + key + "' has a bad value " + it->dump() + ": " + e.what());
  }
}

}  // namespace

ops::OpArgs args_from_json(const json& j) {
  if (!j.is_object()) throw Error("op args must be a JSON object, got " + j.dump());
  // Fields left out keep OpArgs' defaults; unknown fields are an error (a typo
  // would otherwise silently describe another operator).
  static const std::vector<std::string> known = {
      "input", "weight", "stride", "pad",  "dilation",          "padding",  "layout",   "ic_bn",
      "oc_bn", "bias",   "relu",   "pool", "count_include_pad", "clip_min", "clip_max", "axis"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      throw Error("op args: unknown field '" + it.key() + "'");
  ops::OpArgs a;
  read_field(j, "input", a.input);
  read_field(j, "weight", a.weight);
  read_field(j, "stride", a.stride);
  read_field(j, "pad", a.pad);
  read_field(j, "dilation", a.dilation);
  read_field(j, "padding", a.padding);
  read_field(j, "layout", a.layout);
  read_field(j, "ic_bn", a.ic_bn);
  read_field(j, "oc_bn", a.oc_bn);
  read_field(j, "bias", a.bias);
  read_field(j, "relu", a.relu);
  read_field(j, "pool", a.pool);
  read_field(j, "count_include_pad", a.count_include_pad);
  read_field(j, "clip_min", a.clip_min);
  read_field(j, "clip_max", a.clip_max);
  read_field(j, "axis", a.axis);
  return a;
}

}  // namespace tessera::autotvm
