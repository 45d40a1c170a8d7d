#pragma once
// A tuning task: one operator instance, its template and config space, for a target.
#include <nlohmann/json.hpp>
#include <string>

#include "autotvm/template.h"
#include "measure/measure_input.h"
#include "ops/workload.h"

namespace tessera::autotvm {

struct Task {
  std::string op;         // registry name, e.g. "conv2d"
  ops::OpArgs args;       // as declared by the template (e.g. layout NCHWc)
  ops::Workload workload;
  codegen::Target target;
  const Template* tmpl = nullptr;
  ConfigSpace space;

  const std::string& name() const { return tmpl->name; }
  std::string workload_key() const { return workload.dag.workload_key(); }
  double flop() const { return workload.dag.flop_count(); }
  // One line naming the task for people: "conv2d_NCHWc.x86 data=[1,4,56,56,16] ...".
  std::string describe() const;

  schedule::Trace instantiate(const ConfigEntity& config) const;
  measure::MeasureInput measure_input(const ConfigEntity& config) const;
};

// Throws tessera::Error for an unknown operator, bad arguments or no template.
Task create_task(const std::string& op, const ops::OpArgs& args, const codegen::Target& target);

// OpArgs <-> JSON, so records can name the task they measured: only the
// fields `op` takes (ops::op_arg_fields). Reading refuses a field the op does
// not take unless it holds OpArgs' default (logs written before records were
// typed hold every field); throws tessera::Error.
nlohmann::json args_to_json(const std::string& op, const ops::OpArgs& args);
ops::OpArgs args_from_json(const std::string& op, const nlohmann::json& j);

}  // namespace tessera::autotvm
