#include "compile/build.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "autoschedule/tensor_core_fallback.h"
#include "autotvm/history.h"
#include "autotvm/vta/conv2d_packed.h"
#include "codegen/gpu_kernel_set.h"
#include "compile/half_storage_plan.h"
#include "compile/kernel_task.h"
#include "compile/fused_kernel.h"
#include "compile/graph_choices.h"
#include "compile/node_expression.h"
#include "codegen/llvm_codegen.h"
#include "codegen/shared_object.h"
#include "graph/fuse.h"
#include "ops/conv2d.h"
#include "ops/conv2d_packed.h"
#include "records/log_file.h"
#include "schedule/pipelined_steps.h"
#include "tessera/error.h"
#include "tir/hand_written_schedule.h"
#include "tir/lower.h"
#include "vta/conv2d_packed.h"
#include "vta/target_config.h"

namespace tessera::build {
namespace {

// The kernel's symbol after its anchor: the operator, and the algorithm where
// the operator has more than one (so a profile names what ran).
std::string kernel_name_of(const graph::Node& anchor) {
  std::string name = graph::op_name(anchor.op);
  if (anchor.op != graph::Op::kConv2d) return name;
  const auto& a = anchor.attrs_as<ops::Conv2dAttrs>();
  if (a.implicit_gemm) name += "_implicit_gemm";
  if (a.winograd_tile > 0) name += "_winograd";
  return name;
}

using graph::Node;
using graph::NodeId;

// Assembles the executable graph while kernels are made.
class Builder {
 public:
  Builder(const graph::Graph& g, const target::Target& target, const BuildOptions& options)
      : g_(g), target_(target), options_(options), half_(g, options.half_storage) {
    if (target.is_gpu()) gpu_.emplace(target);
    if (target.accelerator == "vta") vta_config_ = vta::config_of(target);
    if (options.half_storage) require_half_storage_target(target);
  }

  BuildResult run() {
    for (NodeId id : g_.input_ids()) {
      result_.artifact.graph.inputs.push_back(new_tensor(g_.node(id).name, g_.node(id).type.shape));
      result_.artifact.graph.tensors.back().integer = g_.node(id).type.dtype == graph::DataType::kInt64;
      tensor_of_[id] = result_.artifact.graph.inputs.back();
    }
    for (const graph::FusedGroup& group : graph::fuse_operators(g_, options_.fuse)) add_kernel_call(group);
    for (NodeId out : g_.outputs()) result_.artifact.graph.outputs.push_back(value_tensor(out, nullptr, 0));
    result_.artifact.target = target_.str();
    result_.artifact.instruction_sets = target_.instruction_sets();
    for (const KernelSummary& k : result_.kernels)
      result_.artifact.kernel_info.push_back({k.name, k.nodes, k.dag.outputs().empty() ? k.flop : k.dag.flop_count(),
                                              k.tuned, k.workload_key, k.task_key});
    if (!vta_kernels_.empty()) result_.artifact.vta = runtime::VtaCode{vta_config_, std::move(vta_kernels_)};
    if (options_.compile && gpu_) result_.artifact.gpu = gpu_->finish();
    else if (options_.compile) result_.artifact.shared_object = codegen::link_shared_object(objects_);
    result_.artifact.graph.validate();
    return std::move(result_);
  }

 private:
  int new_tensor(const std::string& name, const graph::Shape& shape) {
    result_.artifact.graph.tensors.push_back({name, shape});
    return static_cast<int>(result_.artifact.graph.tensors.size()) - 1;
  }

  // The tensor holding node `id`'s value as `reader` (input `index`) wants it:
  // constants are stored once per form the kernels need.
  int value_tensor(NodeId id, const Node* reader, size_t index) {
    const Node& n = g_.node(id);
    if (n.op != graph::Op::kConstant) {
      // A view read by a kernel fused ahead of the view's own place in the
      // order (the fuser lets an epilogue read a reshape of an earlier value).
      if (!tensor_of_.count(id) && keeps_bytes(g_, n)) add_view(n);
      return tensor_of_.at(id);
    }
    const Node& as = reader ? *reader : n;
    if (!reader) index = 0;
    const auto key = std::make_pair(id, kernel_constant_shape(g_, as, index, n.value->shape()));
    auto it = constant_tensor_.find(key);
    if (it != constant_tensor_.end()) return it->second;
    runtime::NDArray value = kernel_constant(g_, as, index, *n.value);
    const int t = new_tensor(n.name, value.shape());
    result_.artifact.graph.tensors[t].half = half_.stored_in_half(id);
    result_.artifact.graph.tensors[t].stored_as = stored_as(n);
    result_.artifact.graph.constants.push_back(t);
    result_.artifact.params.push_back(std::move(value));
    constant_tensor_[key] = t;
    return t;
  }

  void add_view(const Node& n) {
    const int source = value_tensor(n.inputs[0], &n, 0);
    tensor_of_[n.id] = new_tensor(n.name, n.type.shape);
    result_.artifact.graph.tensors.back().view_of = source;
    result_.artifact.graph.tensors.back().half = result_.artifact.graph.tensors[source].half;
    result_.artifact.graph.tensors.back().stored_as = result_.artifact.graph.tensors[source].stored_as;
  }

  // A quantized value's storage in the artifact ("int8", ...; "" for float).
  static std::string stored_as(const Node& n) {
    const graph::DataType t = n.type.dtype;
    return t == graph::DataType::kInt8 || t == graph::DataType::kUInt8 || t == graph::DataType::kInt32
               ? graph::dtype_name(t)
               : std::string();
  }

  // A packed convolution: a program for the accelerator, which the runtime
  // runs on its device (runtime/vta_device.h) where the graph calls it.
  void add_accelerator_call(const graph::FusedGroup& group) {
    const Node& n = g_.node(group.anchor());
    if (target_.accelerator != "vta")
      throw Error(n.describe() + ": conv2d_packed runs on the VTA accelerator; compile for --target vta");
    if (group.nodes.size() != 1) throw Error(n.describe() + ": a packed convolution fuses with nothing");
    if (vta_config_.batch() != 1)
      throw Error(n.describe() + ": VTA configurations with batch blocks other than 1 are not compiled yet");
    const auto& a = n.attrs_as<ops::Conv2dPackedAttrs>();
    std::vector<int> inputs;
    for (size_t i = 0; i < n.inputs.size(); ++i) inputs.push_back(value_tensor(n.inputs[i], &n, i));
    const std::string key = "vta " + a.to_string();
    std::string name;
    if (auto known = kernel_of_key_.find(key); known != kernel_of_key_.end()) {
      name = result_.kernels[known->second].name;
      ++result_.kernels[known->second].calls;
    } else {
      name = "tessera_vta" + std::to_string(result_.kernels.size()) + "_conv2d_packed";
      // The conv2d_packed.vta task's best record, else the template's fallback.
      const autotvm::Task task = autotvm::vta::conv2d_packed_task(a, target_);
      bool tuned = false;
      std::ostream quiet(nullptr);
      const vta::Conv2dPackedSchedule schedule = autotvm::vta::dispatch_conv2d_packed(
          task, options_.history, options_.warn_untuned ? *options_.warnings : quiet, &tuned);
      const vta::Program program = vta::lower_conv2d_packed(a, schedule, vta_config_);
      runtime::VtaKernelCode code = runtime::VtaKernelCode::of(name, program);
      const auto argument = [&](const std::string& tensor, int t, bool widen) {
        const runtime::ExecutableGraph& eg = result_.artifact.graph;
        code.arguments.push_back({program.tensor(tensor).offset, eg.num_elements(t) * eg.element_bytes(t),
                                  widen ? runtime::VtaKernelCode::Transfer::WidenInt8
                                        : runtime::VtaKernelCode::Transfer::Copy});
      };
      argument("data", inputs[0], false);
      argument("weight", inputs[1], false);
      if (a.bias) argument("bias", inputs[2], false);
      if (a.residual) argument("residual", inputs.back(), true);
      code.arguments.push_back({program.tensor("output").offset, ops::num_elements(a.output_shape()),  // int8
                                runtime::VtaKernelCode::Transfer::Copy});
      vta_kernels_.push_back(std::move(code));
      kernel_of_key_[key] = result_.kernels.size();
      KernelSummary summary{name, key, n.name, 1, tuned, {}, task.workload_key()};
      summary.flop = a.flop();
      summary.accelerator = true;
      result_.kernels.push_back(std::move(summary));
    }
    runtime::ExecutableGraph::Call call{name, std::move(inputs), {}};
    tensor_of_[n.id] = new_tensor(n.name, n.type.shape);
    result_.artifact.graph.tensors[tensor_of_[n.id]].stored_as = stored_as(n);
    call.outputs.push_back(tensor_of_[n.id]);
    result_.artifact.graph.calls.push_back(std::move(call));
  }

  void add_kernel_call(const graph::FusedGroup& group) {
    if (g_.node(group.anchor()).op == graph::Op::named("conv2d_packed")) {
      add_accelerator_call(group);
      return;
    }
    if (group.nodes.size() == 1 && keeps_bytes(g_, g_.node(group.anchor())) &&
        g_.node(g_.node(group.anchor()).inputs[0]).op != graph::Op::kConstant) {
      if (!tensor_of_.count(group.anchor())) add_view(g_.node(group.anchor()));
      return;
    }
    FusedKernel kernel = fuse_kernel(g_, group, [&](const KernelOperand& o) {
      return result_.artifact.graph.tensors[value_tensor(o.source, &g_.node(o.reader), o.index)].shape;
    });
    // The kernel stores what the graph says its value is (quantized storage:
    // int8, uint8, int32); the next kernel's placeholder reads the same.
    const Node& written = g_.node(group.output());
    if (!kernel.dag.outputs().empty() && !options_.half_storage &&
        kernel.dag.outputs()[0]->dtype != graph::storage_type(written.type.dtype))
      throw Error("node '" + written.name + "': its kernel stores " + ir::to_string(kernel.dag.outputs()[0]->dtype) +
                  " where the graph holds " + graph::dtype_name(written.type.dtype));
    std::vector<int> inputs;
    for (const KernelOperand& o : kernel.operands)
      inputs.push_back(value_tensor(o.source, &g_.node(o.reader), o.index));
    const Node& out = g_.node(group.output());
    kernel.dag = half_.kernel_dag(kernel, out.id);
    const std::string key = kernel.dag.workload_key();
    auto known = kernel_of_key_.find(key);
    std::string name;
    if (known != kernel_of_key_.end()) {
      name = result_.kernels[known->second].name;
      ++result_.kernels[known->second].calls;
    } else {
      name = "tessera_k" + std::to_string(result_.kernels.size()) + "_" + kernel_name_of(g_.node(group.anchor()));
      bool tuned = false;
      std::string task_key;
      const schedule::Trace trace = schedule_of(group, kernel, tuned, task_key);
      if (options_.compile && gpu_) gpu_->add(tir::lower(kernel.dag, trace, name));
      else if (options_.compile) objects_.push_back(codegen::compile_to_object(tir::lower(kernel.dag, trace, name), target_));
      kernel_of_key_[key] = result_.kernels.size();
      result_.kernels.push_back({name, key, kernel.described, 1, tuned, kernel.dag, task_key});
    }

    runtime::ExecutableGraph::Call call{name, std::move(inputs), {}};
    tensor_of_[out.id] = new_tensor(out.name, out.type.shape);
    result_.artifact.graph.tensors[tensor_of_[out.id]].half = half_.stored_in_half(out.id);
    result_.artifact.graph.tensors[tensor_of_[out.id]].stored_as = stored_as(out);
    call.outputs.push_back(tensor_of_[out.id]);
    result_.artifact.graph.calls.push_back(std::move(call));
  }

  // The kernel's schedule: the auto-scheduler's best record of its own DAG,
  // else its template task's best record when the build has a log (the
  // seed's warning once per task without one), else the untuned one
  // (autoschedule::untuned_schedule: a half product on tensor cores where
  // that pays, BuildOptions::untuned_tensor_cores; the hand-written one).
  // `task_key`: the template task's record key, when the build looked one up.
  schedule::Trace schedule_of(const graph::FusedGroup& group, const FusedKernel& kernel, bool& tuned,
                              std::string& task_key) {
    if (options_.history != nullptr)
      for (records::Record& r : options_.history->ranked(kernel.dag.workload_key(), target_))
        if (r.task_name == records::kAutoScheduleTaskName) {
          tuned = true;
          return std::move(r.trace);
        }
    if (options_.history != nullptr)
      if (const std::optional<autotvm::Task> task = kernel_task(g_, group, kernel, target_, options_.half_storage)) {
        std::ostream quiet(nullptr);
        task_key = task->workload_key();
        autotvm::Dispatched d =
            autotvm::dispatch(*task, *options_.history, options_.warn_untuned ? *options_.warnings : quiet);
        tuned = d.record.has_value();
        if (tuned) return std::move(d.trace);
      }
    schedule::Trace untuned = options_.untuned_tensor_cores ? autoschedule::untuned_schedule(kernel.dag, target_)
                                                            : tir::hand_written_schedule(kernel.dag, target_);
    return options_.untuned_pipeline && target_.is_gpu() ? schedule::pipelined_steps(untuned) : untuned;
  }

  const graph::Graph& g_;
  const target::Target& target_;
  const BuildOptions& options_;
  BuildResult result_;
  std::map<NodeId, int> tensor_of_;
  std::map<std::pair<NodeId, graph::Shape>, int> constant_tensor_;
  std::map<std::string, size_t> kernel_of_key_;
  HalfStoragePlan half_;
  std::vector<std::string> objects_;
  std::optional<codegen::GpuKernelSet> gpu_;  // a GPU target's kernels, instead of objects
  vta::VtaConfig vta_config_;                // the target's (vta::config_of), once it has one
  std::vector<runtime::VtaKernelCode> vta_kernels_;
};

// The passes may leave another node last ("conv.out", a layout transform
// after the convolution named "conv"): the artifact's outputs take the
// model's output names (an inner tensor of that name becomes NAME.inner),
// unless the tensor is also an input or another output, or the name is one.
void name_outputs_as_the_model(const graph::Graph& model, runtime::ExecutableGraph& graph) {
  auto is_io = [&](int t) {
    return std::count(graph.outputs.begin(), graph.outputs.end(), t) > 0 ||
           std::count(graph.inputs.begin(), graph.inputs.end(), t) > 0;
  };
  for (size_t i = 0; i < graph.outputs.size() && i < model.outputs().size(); ++i) {
    const int tensor = graph.outputs[i];
    const std::string& name = model.node(model.outputs()[i]).name;
    if (graph.tensors[tensor].name == name) continue;
    if (std::count(graph.outputs.begin(), graph.outputs.end(), tensor) > 1 ||
        std::count(graph.inputs.begin(), graph.inputs.end(), tensor) > 0)
      continue;
    bool blocked = false;
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
      if (graph.tensors[t].name != name) continue;
      if (is_io(static_cast<int>(t))) blocked = true;
      else graph.tensors[t].name = name + ".inner";
    }
    if (!blocked) graph.tensors[tensor].name = name;
  }
}

}  // namespace

void require_half_storage_target(const target::Target& target) {
  if (!target.is_gpu())
    throw Error("--dtype float16: half storage runs on GPU targets (cuda, opencl); '" + target.str() +
                "' computes in float32");
}

bool implicit_gemm_convolutions(const target::Target& target, bool half_storage) {
  return (half_storage || target.tf32) && target.kind == "cuda" && target.gpu.arch >= 80;
}

graph::ImplicitGemmChoice implicit_gemm_of(const BuildOptions& options, const target::Target& target) {
  if (options.implicit_gemm) return *options.implicit_gemm;
  if (implicit_gemm_convolutions(target, options.half_storage))
    return graph::ImplicitGemmChoice::where(kTensorCoreImplicitGemmMinPositions, 0);
  if (target.kind == "cuda") return graph::ImplicitGemmChoice::where(kImplicitGemmMinPositions, kImplicitGemmMinImage);
  return false;
}

int int8_weight_limit(const target::Target& target) { return target.byte_dot == "pmaddubsw" ? 64 : 127; }

graph::Graph optimize_for_target(const graph::Graph& model, const target::Target& target,
                                 const std::map<std::string, graph::ConvBlocks>& conv_blocks, bool winograd,
                                 bool keep_layout, const graph::ImplicitGemmChoice& implicit_gemm, bool gpu_winograd) {
  graph::PassOptions options;
  // A GPU's kernels read the model's own layout (its threads, not vector
  // lanes, cover the channels): Winograd there only where asked (gpu_winograd).
  options.block = keep_layout || target.is_gpu() ? 0 : target.vector_lanes();
  options.conv_blocks = conv_blocks;
  options.winograd = winograd && !target.is_gpu();
  if (target.is_gpu()) options.implicit_gemm = implicit_gemm;
  options.nchw_winograd = gpu_winograd && target.is_gpu();
  options.int8_weight_limit = int8_weight_limit(target);
  return graph::optimize(model, options);
}

BuildResult build(const graph::Graph& model, const target::Target& target, const BuildOptions& build_options) {
  return build_optimized(model,
                         optimize_for_target(model, target, build_options.conv_blocks, build_options.winograd,
                                             build_options.keep_layout, implicit_gemm_of(build_options, target),
                                             build_options.gpu_winograd),
                         target, build_options);
}

BuildResult build_optimized(const graph::Graph& model, graph::Graph optimized, const target::Target& target,
                            const BuildOptions& build_options) {
  BuildResult result = Builder(optimized, target, build_options).run();
  name_outputs_as_the_model(model, result.artifact.graph);
  result.optimized = std::move(optimized);
  result.conv_blocks_chosen = build_options.conv_blocks.size();
  return result;
}

}  // namespace tessera::build
