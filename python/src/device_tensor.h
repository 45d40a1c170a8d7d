#pragma once
// A framework's tensor in device memory (a torch CUDA tensor, a CuPy array),
// read through the DLPack protocol (__dlpack__ / __dlpack_device__): its
// device pointer, so that a model compiled for the GPU copies it on the
// device instead of through the host.
#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::python {

namespace py = pybind11;

// Whether `value` says (by __dlpack_device__) that it lives in memory the
// host cannot read directly: a GPU's.
bool is_device_tensor(const py::handle& value);
// "CUDA device 0": where such a tensor lives, for messages.
std::string device_tensor_place(const py::handle& value);

// The DLPack view of one tensor, held until destroyed (then its producer
// may free it). Throws py::type_error naming `what` ("input 0") when it is
// not float32, not contiguous, or not on CUDA device 0.
class DeviceTensor {
 public:
  DeviceTensor(const py::handle& value, const std::string& what);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  DeviceTensor(DeviceTensor&& other) noexcept : managed_(other.managed_) { other.managed_ = nullptr; }

  std::uintptr_t pointer() const;
  size_t bytes() const;
  std::vector<int64_t> shape() const;

 private:
  DLManagedTensor* managed_ = nullptr;
};

}  // namespace tessera::python
