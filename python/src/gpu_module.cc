#include "gpu_module.h"

#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "arrays.h"
#include "timing.h"
#include "device_tensor.h"
#include "runtime/gpu_graph_executor.h"
#include "tessera/error.h"

namespace tessera::python {

namespace {

std::string shape_str(const std::vector<int64_t>& shape) { return py::str(py::tuple(py::cast(shape))); }

class GpuModule {
 public:
  GpuModule(runtime::Artifact artifact, const std::string& source)
      : artifact_(runtime::copy_artifact(artifact)), executor_(std::move(artifact), source) {}

  // module(*inputs, out=None): `out` is one CUDA tensor per output (a list
  // or tuple, or the tensor alone for one output), written on the device
  // and returned; without it the outputs come back as host arrays.
  py::object call(const py::args& args, const py::kwargs& kwargs) {
    std::optional<py::object> out;
    for (const auto& [key, value] : kwargs) {
      if (py::str(key).cast<std::string>() != "out")
        throw py::type_error("unexpected keyword argument '" + py::str(key).cast<std::string>() + "' (only out=)");
      if (!value.is_none()) out = py::reinterpret_borrow<py::object>(value);
    }
    if (static_cast<int>(args.size()) != executor_.num_inputs())
      throw py::value_error("the model takes " + std::to_string(executor_.num_inputs()) + " inputs, got " +
                            std::to_string(args.size()));
    // Each input from the host or from device memory, checked against the model's shape.
    std::vector<std::optional<runtime::NDArray>> host(args.size());
    std::vector<std::unique_ptr<DeviceTensor>> device(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const int index = static_cast<int>(i);
      const std::string what = "input " + std::to_string(i) + " ('" + executor_.input_name(index) + "')";
      std::vector<int64_t> shape;
      if (is_device_tensor(args[i])) {
        device[i] = std::make_unique<DeviceTensor>(args[i], what);
        shape = device[i]->shape();
      } else {
        host[i] = to_ndarray(as_input(args[i], i));
        shape = host[i]->shape();
      }
      if (shape != executor_.input_shape(index))
        throw py::value_error(what + " has shape " + shape_str(shape) + ", the model takes " +
                              shape_str(executor_.input_shape(index)));
    }
    std::vector<py::object> given;
    std::vector<std::unique_ptr<DeviceTensor>> targets;
    if (out) {
      if (py::isinstance<py::list>(*out) || py::isinstance<py::tuple>(*out)) {
        for (const auto& o : *out) given.push_back(py::reinterpret_borrow<py::object>(o));
      } else {
        given.push_back(*out);
      }
      if (static_cast<int>(given.size()) != executor_.num_outputs())
        throw py::value_error("out= holds " + std::to_string(given.size()) + " tensors; the model has " +
                              std::to_string(executor_.num_outputs()) + " outputs");
      for (size_t i = 0; i < given.size(); ++i) {
        const std::string what = "out[" + std::to_string(i) + "]";
        targets.push_back(std::make_unique<DeviceTensor>(given[i], what));
        if (targets.back()->shape() != executor_.output_shape(static_cast<int>(i)))
          throw py::value_error(what + " has shape " + shape_str(targets.back()->shape()) + ", the output is " +
                                shape_str(executor_.output_shape(static_cast<int>(i))));
      }
    }
    std::vector<runtime::NDArray> results;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> one_call_at_a_time(mutex_);
      for (size_t i = 0; i < args.size(); ++i) {
        const int index = static_cast<int>(i);
        if (device[i])
          executor_.set_input_from_device(index, device[i]->pointer(), device[i]->bytes());
        else
          executor_.set_input(index, *host[i]);
      }
      executor_.run();
      for (int i = 0; i < executor_.num_outputs(); ++i) {
        if (out)
          executor_.get_output_into_device(i, targets[i]->pointer(), targets[i]->bytes());
        else
          results.push_back(executor_.get_output(i));
      }
    }
    if (out) return single_or_tuple(std::move(given));
    std::vector<py::object> arrays;
    for (auto& r : results) arrays.push_back(to_numpy(std::move(r)));
    return single_or_tuple(std::move(arrays));
  }

  py::dict benchmark(int number, int repeat) { return benchmark_dict(executor_, mutex_, number, repeat); }

  void save(const std::string& path) const { runtime::write_artifact(artifact_, path); }

  std::vector<std::pair<std::string, std::vector<int64_t>>> io(bool inputs) const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> r;
    const int n = inputs ? executor_.num_inputs() : executor_.num_outputs();
    for (int i = 0; i < n; ++i)
      r.emplace_back(inputs ? executor_.input_name(i) : executor_.output_name(i),
                     inputs ? executor_.input_shape(i) : executor_.output_shape(i));
    return r;
  }
  const runtime::GpuGraphExecutor& executor() const { return executor_; }

 private:
  runtime::Artifact artifact_;
  runtime::GpuGraphExecutor executor_;
  std::mutex mutex_;  // over executor_: one call at a time
};

}  // namespace

py::object make_gpu_module(runtime::Artifact artifact, const std::string& source) {
  if (artifact.varying) throw Error(source + ": compiled over a range of sizes: a VaryingModule runs it");
  return py::cast(std::make_unique<GpuModule>(std::move(artifact), source));
}

void bind_gpu_module(py::module_& m) {
  py::class_<GpuModule>(m, "GpuModule")
      .def("__call__", &GpuModule::call)
      .def("save", &GpuModule::save, py::arg("path"))
      .def("benchmark", &GpuModule::benchmark, py::arg("number") = 10, py::arg("repeat") = 3)
      .def_property_readonly("inputs", [](const GpuModule& g) { return g.io(true); })
      .def_property_readonly("outputs", [](const GpuModule& g) { return g.io(false); })
      .def_property_readonly("target", [](const GpuModule& g) { return g.executor().target(); })
      .def_property_readonly("device", [](const GpuModule& g) { return g.executor().device_name(); })
      .def_property_readonly("kernels", [](const GpuModule& g) {
        std::vector<std::string> names;
        for (const auto& call : g.executor().graph().calls) names.push_back(call.kernel);
        return names;
      });
}

}  // namespace tessera::python
