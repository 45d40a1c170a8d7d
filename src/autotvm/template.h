#pragma once
// Schedule templates: for one operator family on one target, a config space
// and a way to turn any config of it into a schedule Trace.
#include <functional>
#include <string>
#include <vector>

#include "autotvm/config_space.h"
#include "target/target.h"
#include "ops/registry.h"
#include "schedule/trace.h"

namespace tessera::autotvm {

struct Template {
  std::string name;         // e.g. "conv2d_NCHWc.x86"
  std::string target_kind;  // "llvm" (CPU), or "gpu" (cuda and opencl)
  // Whether it schedules this operator instance (e.g. 1x1 convolutions only).
  std::function<bool(const std::string& op, const ops::OpArgs& args)> matches;
  // How the operator is declared for this template (e.g. conv2d in NCHWc with
  // blocks chosen for the target): the args make_workload is called with.
  std::function<ops::OpArgs(const ops::OpArgs& args, const target::Target& target)> declare;
  // Throws tessera::Error when the template cannot schedule this workload
  // after all (one whose form only its DAG shows, e.g. tensor-core tiles need
  // half operands): the next matching template is tried.
  std::function<ConfigSpace(const ops::Workload& w, const target::Target& target)> define_space;
  std::function<schedule::Trace(const ops::Workload& w, const target::Target& target, const ConfigEntity& config)>
      apply;
};

// The registry, filled once on first use with the built-in templates.
const std::vector<Template>& templates();
// The templates for an operator instance on a target, in the registry's
// order (the more specialised first: create_task takes the first that can
// define its space on the task's workload); throws tessera::Error naming
// the operator and target when there is none.
std::vector<const Template*> find_templates(const std::string& op, const ops::OpArgs& args,
                                            const target::Target& target);

}  // namespace tessera::autotvm
