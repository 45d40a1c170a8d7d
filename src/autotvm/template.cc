#include "autotvm/template.h"

#include "autotvm/gpu/gpu_templates.h"
#include "autotvm/x86/x86_templates.h"
#include "tessera/error.h"

namespace tessera::autotvm {

const std::vector<Template>& templates() {
  // Filled on first use by explicit calls (thread-safe static initialisation).
  static const std::vector<Template> registry = {
      x86::conv2d_nchwc_1x1_template(), x86::conv2d_nchwc_template(), x86::depthwise_conv2d_nchwc_template(),
      x86::conv2d_winograd_template(), x86::dense_pack_template(), x86::batch_matmul_template(),
      x86::qlinear_conv2d_nchwc_template(),
      // Before the plain GPU templates of the same operators: tried first.
      gpu::dense_tensor_core_template(), gpu::batch_matmul_tensor_core_template(),
      gpu::conv2d_nchw_implicit_gemm_tensor_core_template(), gpu::conv2d_nhwc_implicit_gemm_tensor_core_template(),
      gpu::dense_template(), gpu::batch_matmul_template(), gpu::conv2d_nchw_template(),
      gpu::depthwise_conv2d_nchw_template(), gpu::conv2d_nchw_winograd_template(),
      gpu::conv2d_nchw_implicit_gemm_template(), gpu::conv2d_nhwc_implicit_gemm_template(),
  };
  return registry;
}

std::vector<const Template*> find_templates(const std::string& op, const ops::OpArgs& args,
                                            const target::Target& target) {
  std::vector<const Template*> found;
  for (const auto& t : templates())
    if ((t.target_kind == target.kind || (t.target_kind == "gpu" && target.is_gpu())) && t.matches(op, args))
      found.push_back(&t);
  if (!found.empty()) return found;
  std::string listed;
  for (const auto& t : templates()) listed += (listed.empty() ? "" : ", ") + t.name + " (" + t.target_kind + ")";
  std::string kernel =
      args.weight.size() == 4 ? " kernel " + std::to_string(args.weight[2]) + "x" + std::to_string(args.weight[3]) : "";
  throw Error("no AutoTVM template for op '" + op + "' (layout " + args.layout + kernel + ") on target '" +
              target.str() + "'; templates: " + listed);
}

}  // namespace tessera::autotvm
