#include "autotvm/task.h"

#include <algorithm>
#include <functional>
#include <set>
#include <type_traits>

#include "tessera/error.h"

namespace tessera::autotvm {

using nlohmann::json;

std::string Task::describe() const {
  if (!accelerator.is_null()) return name() + " " + accelerator.value("describe", std::string());
  std::string s = name();
  for (const auto& p : workload.dag.placeholders()) s += " " + p->name + "=" + ops::shape_to_string(p->shape);
  if (op == "conv2d" || op == "conv2d_winograd" || op == "conv2d_nchw_winograd" || op == "conv2d_nchw_implicit_gemm" ||
      op == "conv2d_nhwc_implicit_gemm" || op == "depthwise_conv2d" || op == "group_conv2d") {
    s += " stride=" + std::to_string(args.stride) + " dilation=" + std::to_string(args.dilation);
    if (op == "group_conv2d") s += " groups=" + std::to_string(args.groups);
    s += args.padding.empty() ? " pad=" + std::to_string(args.pad) : " padding=" + ops::shape_to_string(args.padding);
  }
  if (args.bias) s += " +bias";
  if (args.relu) s += " +relu";
  if (!epilogue.empty()) s += " + " + epilogue;
  if (args.dtype != "float32") s += " (" + args.dtype + " storage)";
  return s;
}

schedule::Trace Task::instantiate(const ConfigEntity& config) const { return tmpl->apply(workload, target, config); }

measure::MeasureInput Task::measure_input(const ConfigEntity& config) const {
  if (!accelerator.is_null())
    return measure::MeasureInput{{}, {}, target, {{"template", name()}, {"workload", accelerator}, {"config", config.to_json()}}};
  return measure::MeasureInput{workload.dag, instantiate(config), target};
}

namespace {

// The first matching template that can schedule the workload (its space
// defined), the workload made by `workload_of` from the template's declared
// arguments; the last template's error when none can.
Task first_schedulable(const std::string& op, const ops::OpArgs& args, const target::Target& target,
                       const std::function<ops::Workload(const ops::OpArgs& declared)>& workload_of) {
  const std::vector<const Template*> candidates = find_templates(op, args, target);
  for (size_t i = 0; i < candidates.size(); ++i) {
    Task t;
    t.op = op;
    t.target = target;
    t.tmpl = candidates[i];
    t.args = t.tmpl->declare(args, target);
    t.workload = workload_of(t.args);
    try {
      t.space = t.tmpl->define_space(t.workload, target);
    } catch (const Error&) {
      if (i + 1 == candidates.size()) throw;
      continue;
    }
    return t;
  }
  throw Error("unreachable: find_templates returns at least one template");
}

}  // namespace

Task create_task(const std::string& op, const ops::OpArgs& args, const target::Target& target) {
  return first_schedulable(op, args, target,
                           [&](const ops::OpArgs& declared) { return ops::make_workload(op, declared); });
}

Task create_task(const std::string& op, const ops::OpArgs& args, const ir::ComputeDAG& dag,
                 const target::Target& target, const std::string& epilogue) {
  Task t = first_schedulable(op, args, target, [&](const ops::OpArgs&) { return ops::Workload{op, dag, nullptr}; });
  t.epilogue = epilogue;
  return t;
}

namespace {

// Every field of OpArgs with its JSON name, the one list both directions use.
template <typename Args, typename Visit>
void for_each_arg(Args& a, Visit&& visit) {
  visit("input", a.input);
  visit("weight", a.weight);
  visit("stride", a.stride);
  visit("pad", a.pad);
  visit("dilation", a.dilation);
  visit("padding", a.padding);
  visit("layout", a.layout);
  visit("ic_bn", a.ic_bn);
  visit("oc_bn", a.oc_bn);
  visit("groups", a.groups);
  visit("bias", a.bias);
  visit("relu", a.relu);
  visit("pool", a.pool);
  visit("count_include_pad", a.count_include_pad);
  visit("clip_min", a.clip_min);
  visit("clip_max", a.clip_max);
  visit("axis", a.axis);
  visit("winograd_tile", a.winograd_tile);
  visit("dtype", a.dtype);
}

}  // namespace

json args_to_json(const std::string& op, const ops::OpArgs& a) {
  const std::vector<std::string>& fields = ops::op_arg_fields(op);
  json j = json::object();
  for_each_arg(a, [&](const char* key, const auto& value) {
    if (std::find(fields.begin(), fields.end(), key) != fields.end()) j[key] = value;
  });
  // fp32 arguments are what every record written before dtype existed
  // describes: left out, their workloads keep their keys.
  if (a.dtype == "float32") j.erase("dtype");
  return j;
}

ops::OpArgs args_from_json(const std::string& op, const json& j) {
  if (!j.is_object()) throw Error("op args must be a JSON object, got " + j.dump().substr(0, 80));
  const std::vector<std::string>& fields = ops::op_arg_fields(op);
  ops::OpArgs a;
  // Fields left out keep OpArgs' defaults; unknown fields are an error (a typo
  // would otherwise silently describe another operator), and so is a field
  // the op does not take, unless it holds the default.
  std::set<std::string> known;
  json defaults = json::object();
  for_each_arg(a, [&](const char* key, const auto& value) {
    known.insert(key);
    defaults[key] = value;
  });
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!known.count(it.key())) throw Error("op args: unknown field '" + it.key() + "'");
    if (std::find(fields.begin(), fields.end(), it.key()) == fields.end() && *it != defaults[it.key()])
      throw Error("op args: " + op + " takes no field '" + it.key() + "'");
  }
  for_each_arg(a, [&](const char* key, auto& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    try {
      out = it->get<std::remove_reference_t<decltype(out)>>();
    } catch (const json::exception& e) {
      throw Error(std::string("op args: field '") + key + "' has a bad value " + it->dump() + ": " + e.what());
    }
  });
  return a;
}

}  // namespace tessera::autotvm
