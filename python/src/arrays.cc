#include "arrays.h"

#include <cstring>
#include <memory>
#include <string>

#include "device_tensor.h"

namespace tessera::python {

FloatArray as_input(const py::handle& value, size_t index) {
  if (is_device_tensor(value))
    throw py::type_error("input " + std::to_string(index) + " is a tensor in " + device_tensor_place(value) +
                         " memory; this module takes host arrays (a model compiled for target='cuda' at fixed "
                         "shapes takes device tensors)");
  py::array a = py::array::ensure(value);
  if (!a) throw py::type_error("input " + std::to_string(index) + " is not an array");
  const char kind = a.dtype().kind();
  if (kind == 'i' || kind == 'u' || kind == 'b') {
    a = a.attr("astype")("int64");
    if (a.size() > 0 && py::cast<int64_t>(a.attr("__abs__")().attr("max")()) > (int64_t{1} << 24))
      throw py::value_error("input " + std::to_string(index) +
                            " holds integers beyond 2^24, which float32 cannot hold exactly");
    return FloatArray::ensure(a.attr("astype")("float32"));
  }
  if (!a.dtype().is(py::dtype::of<float>()))
    throw py::type_error("input " + std::to_string(index) + " has dtype " + std::string(py::str(a.dtype())) +
                         "; Tessera's models take float32 or integers (convert with .astype(numpy.float32))");
  return FloatArray::ensure(a);
}

std::vector<int64_t> shape_of(const py::array& a) { return {a.shape(), a.shape() + a.ndim()}; }

runtime::NDArray to_ndarray(const FloatArray& a) {
  runtime::NDArray x(shape_of(a));
  std::memcpy(x.data(), a.data(), static_cast<size_t>(a.size()) * sizeof(float));
  return x;
}

py::array to_numpy(runtime::NDArray value) {
  auto owned = std::make_unique<runtime::NDArray>(std::move(value));
  const std::vector<py::ssize_t> shape(owned->shape().begin(), owned->shape().end());
  float* data = owned->data();
  py::capsule owner(owned.get(), [](void* p) { std::unique_ptr<runtime::NDArray>(static_cast<runtime::NDArray*>(p)); });
  owned.release();  // the capsule owns it now
  return FloatArray(shape, data, owner);
}

py::object single_or_tuple(std::vector<py::object> outputs) {
  if (outputs.size() == 1) return std::move(outputs[0]);
  py::tuple t(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) t[i] = std::move(outputs[i]);
  return std::move(t);
}

}  // namespace tessera::python
