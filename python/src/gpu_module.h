#pragma once
// tessera.GpuModule: a model compiled for a GPU target (cuda, opencl) run on
// its device by runtime::GpuGraphExecutor. Inputs are host arrays (copied
// in) or, on a CUDA device, the frameworks' CUDA tensors through DLPack
// (copied on the device); outputs are host arrays, or written on the device
// into the CUDA tensors given as `out=`.
#include <pybind11/pybind11.h>

#include <string>

#include "runtime/artifact.h"

namespace tessera::python {

namespace py = pybind11;

// The Python object running `artifact` (which has GPU code) on its device.
py::object make_gpu_module(runtime::Artifact artifact, const std::string& source);
void bind_gpu_module(py::module_& m);

}  // namespace tessera::python
