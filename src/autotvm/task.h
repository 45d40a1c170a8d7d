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
  target::Target target;
  const Template* tmpl = nullptr;
  ConfigSpace space;
  // The key its records are filed under; empty: the DAG's own key. A
  // network's task files them under its anchor's key (the convolution without
  // its epilogue), which every kernel of that anchor shares.
  std::string record_key;
  // What the DAG computes beyond the operator, e.g. "bias_add + add + relu"
  // (a network task's fused epilogue); empty for a bare operator.
  std::string epilogue;
  // An accelerator's task (VTA's conv2d_packed, autotvm/vta/conv2d_packed.h):
  // its workload as the records write it (no DAG: the accelerator's builder
  // lowers it), and its arithmetic. Null for every other task.
  nlohmann::json accelerator;
  double accelerator_flop = 0;

  const std::string& name() const { return tmpl->name; }
  std::string workload_key() const { return record_key.empty() ? workload.dag.workload_key() : record_key; }
  double flop() const { return accelerator.is_null() ? workload.dag.flop_count() : accelerator_flop; }
  // One line naming the task for people: "conv2d_NCHWc.x86 data=[1,4,56,56,16] ...".
  std::string describe() const;

  schedule::Trace instantiate(const ConfigEntity& config) const;
  measure::MeasureInput measure_input(const ConfigEntity& config) const;
};

// Throws tessera::Error for an unknown operator, bad arguments or no template.
Task create_task(const std::string& op, const ops::OpArgs& args, const target::Target& target);
// The task of an operator declared elsewhere: `dag` computes `op` with `args`
// (as the template declares it, e.g. NCHWc with the graph's blocks) followed
// by an elementwise epilogue. A network's kernels become tasks this way; the
// workload has no reference (the network's interpreter checks the whole).
Task create_task(const std::string& op, const ops::OpArgs& args, const ir::ComputeDAG& dag,
                 const target::Target& target, const std::string& epilogue);

// OpArgs <-> JSON, so records can name the task they measured: only the
// fields `op` takes (ops::op_arg_fields). Reading refuses a field the op does
// not take unless it holds OpArgs' default (logs written before records were
// typed hold every field); throws tessera::Error.
nlohmann::json args_to_json(const std::string& op, const ops::OpArgs& args);
ops::OpArgs args_from_json(const std::string& op, const nlohmann::json& j);

}  // namespace tessera::autotvm
