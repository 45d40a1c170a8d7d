#include "measure/gpu_function.h"

#include "codegen/gpu_kernel_set.h"
#include "support/half.h"
#include "tessera/error.h"

namespace tessera::measure {

namespace {
size_t bytes_of(int64_t elements) { return static_cast<size_t>(elements) * sizeof(float); }
bool half(const ir::Tensor& t) { return t->dtype == ir::DType::Float16; }
size_t bytes_of(const ir::Tensor& t) {
  return half(t) ? static_cast<size_t>(t->num_elements()) * sizeof(uint16_t) : bytes_of(t->num_elements());
}
}  // namespace

GpuFunction::GpuFunction(const tir::LoweredFunc& f, const target::Target& target) : f_(f) {
  codegen::GpuKernelSet set(target);
  set.add(f);
  code_ = set.finish();
  backend_ = runtime::make_gpu_backend(code_.dialect);
  backend_->load(code_);
  for (const ir::Tensor& a : f.args) buffers_.push_back(backend_->allocate(bytes_of(a)));
  for (int64_t w : code_.kernels.at(f.name).workspace) buffers_.push_back(backend_->allocate(bytes_of(w)));
}

void GpuFunction::launch_all() {
  for (const runtime::GpuLaunch& l : code_.kernels.at(f_.name).launches) {
    std::vector<int> args;
    for (int p : l.params) args.push_back(buffers_.at(p));
    backend_->launch(l, args);
  }
}

void GpuFunction::run(const std::vector<float*>& args) {
  if (args.size() != f_.args.size())
    throw Error("GPU function " + f_.name + ": " + std::to_string(args.size()) + " arrays for " +
                std::to_string(f_.args.size()) + " arguments");
  // Half-stored arguments cross as halves: the host's floats rounded on the
  // way in, widened on the way out.
  std::vector<std::vector<uint16_t>> halves(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Tensor& a = f_.args[i];
    if (!half(a)) {
      backend_->write(buffers_[i], args[i], bytes_of(a));
      continue;
    }
    halves[i] = support::to_halves(args[i], a->num_elements());
    backend_->write(buffers_[i], halves[i].data(), bytes_of(a));
  }
  launch_all();
  backend_->finish();
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Tensor& a = f_.args[i];
    if (!half(a)) {
      backend_->read(buffers_[i], args[i], bytes_of(a));
      continue;
    }
    backend_->read(buffers_[i], halves[i].data(), bytes_of(a));
    support::from_halves(halves[i].data(), a->num_elements(), args[i]);
  }
}

double GpuFunction::run_timed() {
  backend_->begin_timing();
  launch_all();
  return backend_->finish();
}

}  // namespace tessera::measure
