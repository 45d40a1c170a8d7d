#include "device_tensor.h"

namespace tessera::python {

namespace {

// (device type, device id) from __dlpack_device__, or (kDLCPU, 0) for
// objects without it (numpy before 1.22, lists).
std::pair<int, int> dlpack_device(const py::handle& value) {
  if (!py::hasattr(value, "__dlpack_device__")) return {kDLCPU, 0};
  const py::tuple device = value.attr("__dlpack_device__")();
  return {device[0].cast<int>(), device[1].cast<int>()};
}

std::string place_of(int type, int id) {
  switch (type) {
    case kDLCPU: return "host";
    case kDLCUDA: return "CUDA device " + std::to_string(id);
    case kDLCUDAManaged: return "CUDA managed";
    case kDLROCM: return "ROCm device " + std::to_string(id);
    case kDLOpenCL: return "OpenCL device " + std::to_string(id);
    default: return "device type " + std::to_string(type) + " (DLPack)";
  }
}

}  // namespace

bool is_device_tensor(const py::handle& value) {
  const int type = dlpack_device(value).first;
  return type != kDLCPU && type != kDLCUDAHost && type != kDLROCMHost;
}

std::string device_tensor_place(const py::handle& value) {
  const auto [type, id] = dlpack_device(value);
  return place_of(type, id);
}

DeviceTensor::DeviceTensor(const py::handle& value, const std::string& what) {
  const auto [type, id] = dlpack_device(value);
  if (type != kDLCUDA)
    throw py::type_error(what + " is not a CUDA tensor (its memory is " + place_of(type, id) + "'s)");
  // The module's backend holds device 0's primary context; another device's
  // pointer means nothing there.
  if (id != 0) throw py::type_error(what + " is on CUDA device " + std::to_string(id) + "; Tessera runs on device 0");
  // stream=1: the producer makes CUDA's legacy default stream wait for its
  // own work on the tensor; the module's stream is a blocking one, ordered
  // after the legacy stream.
  py::object capsule = value.attr("__dlpack__")(py::arg("stream") = 1);
  PyObject* raw = capsule.ptr();
  if (!PyCapsule_IsValid(raw, "dltensor")) throw py::type_error(what + ": __dlpack__ gave no unused DLPack capsule");
  managed_ = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, "dltensor"));
  // Ours now: the capsule must not free it (the protocol's renaming).
  PyCapsule_SetName(raw, "used_dltensor");
  const DLTensor& t = managed_->dl_tensor;
  auto refuse = [&](const std::string& why) {
    const std::string message = what + ": " + why;
    if (managed_->deleter) managed_->deleter(managed_);
    managed_ = nullptr;
    throw py::type_error(message);
  };
  if (t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    refuse("the CUDA tensor is not float32 (convert it with .float())");
  if (t.strides != nullptr) {
    int64_t expected = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != expected)
        refuse("the CUDA tensor is not contiguous (make it so with .contiguous())");
      expected *= t.shape[d];
    }
  }
}

DeviceTensor::~DeviceTensor() {
  if (managed_ && managed_->deleter) managed_->deleter(managed_);
}

std::uintptr_t DeviceTensor::pointer() const {
  const DLTensor& t = managed_->dl_tensor;
  return reinterpret_cast<std::uintptr_t>(t.data) + static_cast<std::uintptr_t>(t.byte_offset);
}

std::vector<int64_t> DeviceTensor::shape() const {
  const DLTensor& t = managed_->dl_tensor;
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}

size_t DeviceTensor::bytes() const {
  size_t elements = 1;
  for (int64_t d : shape()) elements *= static_cast<size_t>(d);
  return elements * sizeof(float);
}

}  // namespace tessera::python
