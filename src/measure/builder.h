#pragma once
// Builders turn MeasureInputs into compiled kernels on disk.
#include <functional>
#include <string>
#include <vector>

#include "measure/measure_input.h"

namespace tessera::measure {

class Builder {
 public:
  virtual ~Builder() = default;
  virtual std::vector<BuildResult> build(const std::vector<MeasureInput>& inputs) = 0;
};

struct LocalBuilderOptions {
  double timeout = 10;    // seconds per candidate
  int n_parallel = 0;     // worker processes; 0 = number of cores
  std::string build_dir;  // where objects go; empty = a fresh temporary directory
  // Link each kernel into a shared object (the system C compiler, in the
  // worker): what a runtime-only RPC server loads. Otherwise a relocatable
  // object, which LocalRunner's child links itself.
  bool shared_object = false;
};

// Lowers and compiles candidates in parallel worker processes. A candidate whose
// build crashes or exceeds the timeout costs that candidate only.
class LocalBuilder : public Builder {
 public:
  explicit LocalBuilder(LocalBuilderOptions options = {});
  ~LocalBuilder() override;
  std::vector<BuildResult> build(const std::vector<MeasureInput>& inputs) override;
  const std::string& build_dir() const { return dir_; }

  // Test-only: called inside the worker just before candidate `index` is lowered,
  // so a test can make a build crash or hang.
  void set_fault_hook_for_testing(std::function<void(int index)> hook) { fault_hook_ = std::move(hook); }

 private:
  LocalBuilderOptions options_;
  std::string dir_;
  bool owns_dir_ = false;
  int counter_ = 0;
  std::function<void(int)> fault_hook_;
};

}  // namespace tessera::measure
