#include "testing/qlinear_conv_case.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "codegen/llvm_codegen.h"
#include "codegen/module.h"
#include "measure/storage_arguments.h"
#include "runtime/thread_pool.h"
#include "tir/lower.h"

namespace tessera::testing {

ops::QLinearConv2dAttrs blocked_attrs(const QLinearConvCase& c) {
  ops::QLinearConv2dAttrs a;
  a.conv = c.attrs;
  a.conv.data_layout = "NCHW" + std::to_string(c.ic_bn) + "c";
  a.conv.kernel_layout = ops::int8_kernel_layout(c.ic_bn, c.oc_bn);
  a.x_scale = 0.02f, a.y_scale = 4.0f;
  a.x_zero_point = 3, a.y_zero_point = 7;
  a.relu = true;
  a.centered = c.centered;
  return a;
}

ir::ComputeDAG qlinear_conv_dag(const QLinearConvCase& c) {
  const ops::Shape xs = {c.x[0], c.x[1] / c.ic_bn, c.x[2], c.x[3], c.ic_bn};
  const ops::Shape ws = {c.out_channels / c.oc_bn, c.x[1] / c.ic_bn, c.kernel, c.kernel, c.ic_bn / 4, c.oc_bn, 4};
  const ir::Tensor x = ir::placeholder(xs, "x", ir::DType::UInt8), w = ir::placeholder(ws, "w", ir::DType::Int8);
  const ir::Tensor scale = ir::placeholder({c.out_channels}, "w_scale");
  const ir::Tensor bias = ir::placeholder({c.out_channels}, "bias", ir::DType::Int32);
  return ir::ComputeDAG({ops::qlinear_conv2d_nchwc(x, w, scale, bias, blocked_attrs(c))});
}

QLinearConvRun run_qlinear_conv(const QLinearConvCase& c, const ir::ComputeDAG& dag, const schedule::Trace& trace,
                                const target::Target& target, int most, int threads) {
  const tir::LoweredFunc f = tir::lower(dag, trace, "qconv");
  QLinearConvRun run;
  run.assembly = codegen::emit_assembly(f, target);
  if (!target.missing_on(target::Target::host()).empty()) return run;

  // The placeholders by name, in the kernel's argument order.
  const std::vector<ir::Tensor> order = dag.placeholders();
  std::vector<runtime::NDArray> inputs, outputs;
  for (const ir::Tensor& p : order) inputs.emplace_back(p->shape);
  auto value_of = [&](const std::string& name) -> runtime::NDArray& {
    const auto at = std::find_if(order.begin(), order.end(), [&](const ir::Tensor& t) { return t->name == name; });
    return inputs[static_cast<size_t>(at - order.begin())];
  };
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> bytes(0, 255), weights(-most, std::min(most, 127)), biases(-5000, 5000);
  std::uniform_real_distribution<float> scales(0.001f, 0.01f);
  runtime::NDArray &xv = value_of("x"), &wv = value_of("w"), &scale_v = value_of("w_scale"), &bias_v = value_of("bias");
  for (int64_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(bytes(rng));
  for (int64_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(weights(rng));
  for (int64_t i = 0; i < c.out_channels; ++i) {
    scale_v[i] = scales(rng);
    bias_v[i] = static_cast<float>(biases(rng));
  }
  outputs.emplace_back(dag.outputs()[0]->shape);
  codegen::Module m = codegen::Module::load_object(codegen::compile_to_object(f, target));
  measure::StorageArguments args(dag, inputs, outputs);
  runtime::set_num_threads(threads);
  m.function("qconv")(args.pointers());
  runtime::set_num_threads(0);
  args.outputs_to_arrays();

  runtime::NDArray want(dag.outputs()[0]->shape);
  ops::reference::qlinear_conv2d_nchwc(xv.data(), value_of("x").shape(), wv.data(), value_of("w").shape(),
                                       scale_v.data(), bias_v.data(), blocked_attrs(c), want.data());
  run.difference = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    run.difference = std::max<double>(run.difference, std::fabs(outputs[0][i] - want[i]));
  return run;
}

}  // namespace tessera::testing
