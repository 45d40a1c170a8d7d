#pragma once
// Arrays across the Python boundary: numpy float32 in (read in place when
// C-contiguous) and out (owning the executor's copy, no second one).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "runtime/ndarray.h"

namespace tessera::python {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style>;

// Input `index` as float32: float32 itself, or integers (token ids, masks:
// read as float32, which holds them exactly up to 2^24); float64 is refused
// rather than silently rounded, and so is a tensor in device memory (one
// line saying which module takes it). C-contiguous, or a contiguous copy
// when the layout does not allow reading in place.
FloatArray as_input(const py::handle& value, size_t index);

std::vector<int64_t> shape_of(const py::array& a);
runtime::NDArray to_ndarray(const FloatArray& a);
// A numpy array owning `value`'s memory: no second copy.
py::array to_numpy(runtime::NDArray value);
// One output as itself, several as a tuple.
py::object single_or_tuple(std::vector<py::object> outputs);

}  // namespace tessera::python
