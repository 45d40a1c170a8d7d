#pragma once
// The ONNX importer's state, shared by its parts: onnx_import.cc reads the
// model (the file, tensors, inputs, node order, values, attributes) and
// onnx_operators.cc converts each ONNX operator to graph nodes, with
// onnx_index_operators.cc. Included by those files only (it needs the ONNX
// headers and their definitions).
#include <onnx/onnx_pb.h>

#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/onnx_import.h"
#include "tessera/error.h"

namespace tessera::graph::onnx_importer {

// 28: the newest the onnx package on PyPI defines (1.23). From 19 on, the
// operators this importer maps changed only in types it does not run
// (bfloat16, float8, int4), but for AveragePool's dilations (refused unless 1)
// and Pad's "wrap" mode (refused), both checked where those are imported.
constexpr int64_t kMinOpset = 11, kMaxOpset = 28;
constexpr size_t kMaxFileBytes = size_t{2} << 30;  // protobuf's own limit

// A value flowing between ONNX nodes: a graph node (activations, float
// constants) or a small integer tensor known at import (shapes, axes, pads).
struct Value {
  NodeId node = -1;
  std::optional<std::vector<int64_t>> ints;
  Shape ints_shape;
  // The ONNX element type of known integers (a quantized weight's INT8, a
  // zero point's UINT8): what a quantized value is stored as.
  int element_type = 0;
};

// A name from the file as a graph name: control bytes (which would break a
// one-line message) as '?', at most 256 characters.
std::string clean(const std::string& name);
// "[3, 8, 7, 7]", or the rank alone for a long list.
std::string dims_text(const onnx::TensorProto& t);
std::string element_type_name(int t);

class Importer {
 public:
  Importer(const std::string& path, const OnnxImportOptions& options) : path_(path), options_(options) {}

  Graph run();

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error("ONNX model '" + path_ + "': " + what); }

  std::string describe(const onnx::NodeProto& n) const;

  void read_model();

  // ---- tensors -----------------------------------------------------------

  Shape dims_of(const onnx::TensorProto& t, const std::string& what) const;

  // The elements of `t` as T, from raw_data (little-endian, `size` bytes each)
  // or from the typed field. The count must match the dims, and is checked
  // before anything is allocated: a hostile file's dims can claim terabytes.
  template <class T, class Field>
  std::vector<T> elements(const onnx::TensorProto& t, size_t size, const Field& field, int64_t count,
                          const std::string& what) const {
    if (t.has_raw_data()) {
      if (t.raw_data().size() / size != static_cast<size_t>(count) || t.raw_data().size() % size != 0)
        fail(what + ": raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, its dims " +
             dims_text(t) + " need " +
             std::to_string(count) + " x " + std::to_string(size));
      std::vector<T> out(static_cast<size_t>(count));
      if (count > 0) std::memcpy(out.data(), t.raw_data().data(), t.raw_data().size());
      return out;
    }
    if (field.size() != count)
      fail(what + ": holds " + std::to_string(field.size()) + " values, its dims " +
           dims_text(t) + " need " + std::to_string(count));
    return std::vector<T>(field.begin(), field.end());
  }

  Value tensor_value(const onnx::TensorProto& t, const std::string& what);
  // The bytes of a tensor kept in an external file (models over 2 GiB):
  // its "location" relative to the model's folder (never outside it), at
  // "offset", as many as its dims and element type need.
  std::string external_bytes(const onnx::TensorProto& t, const std::string& what) const;

  void add_initializer(const onnx::TensorProto& t);

  void add_input(const onnx::ValueInfoProto& in);

  // ---- node order --------------------------------------------------------

  // Nodes in an order where each comes after the producers of its inputs (a
  // depth-first search with an explicit stack: a hostile file may chain
  // millions of nodes). Every value has one producer.
  std::vector<const onnx::NodeProto*> topological_order(const onnx::GraphProto& g);

  // ---- values ------------------------------------------------------------

  const Value& value(const std::string& name, const std::string& who) const;

  NodeId activation(const std::string& name, const std::string& who);

  const std::vector<int64_t>& ints(const onnx::NodeProto& n, int input) const;

  // A float tensor known now (an initializer or folded constant), or none.
  const runtime::NDArray* constant_of(const onnx::NodeProto& n, int input) const;
  // The values of a node computed from constants alone (through at most 32
  // nodes), evaluated now by the reference interpreter; nullopt otherwise.
  std::optional<std::vector<float>> constant_values(NodeId id, int depth = 0) const;

  const Shape& shape_of(NodeId id) const { return b_.graph().node(id).type.shape; }

  void set_output(const onnx::NodeProto& n, NodeId id, int index = 0);

  void set_ints(const onnx::NodeProto& n, std::vector<int64_t> v, Shape shape);
  // f applied to the known integers of `operands` with NumPy broadcasting,
  // set as n's output.
  void set_broadcast_ints(const onnx::NodeProto& n, const std::vector<const Value*>& operands,
                          const std::function<int64_t(const std::vector<int64_t>&)>& f);

  // ---- attributes --------------------------------------------------------

  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) const;
  int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) const;
  float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) const;
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> fallback) const;
  std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) const;

  // ---- operators ---------------------------------------------------------

  std::string name_of(const onnx::NodeProto& n) const;

  void require_inputs(const onnx::NodeProto& n, int least) const;

  // QuantizeLinear / DequantizeLinear (onnx_quantized_operators.cc).
  void convert_quantize_linear(const onnx::NodeProto& n);
  void convert_dequantize_linear(const onnx::NodeProto& n);
  // The QOperator format and dynamic quantization, as the float operators
  // between quantize / dequantize pairs (onnx_quantized_operators.cc).
  void convert_qlinear_conv(const onnx::NodeProto& n);
  void convert_qlinear_matmul(const onnx::NodeProto& n);
  void convert_qgemm(const onnx::NodeProto& n);
  void convert_qlinear_elementwise(const onnx::NodeProto& n, const std::string& float_op, int operands);
  void convert_qlinear_concat(const onnx::NodeProto& n);
  void convert_conv_integer(const onnx::NodeProto& n);
  void convert_matmul_integer(const onnx::NodeProto& n);
  void convert_dynamic_quantize_linear(const onnx::NodeProto& n);
  // The com.microsoft operators onnxruntime's quantizer writes.
  void convert_microsoft(const onnx::NodeProto& n);
  // A value name of n's own, for the nodes it is imported as.
  std::string synthetic(const onnx::NodeProto& n, const std::string& what) const;
  // Input q of n dequantized with inputs q+1, q+2 (scale, zero point), per
  // channel along `axis` where it is a constant: the new value's name.
  std::string dequantize_input(const onnx::NodeProto& n, int q, int axis);
  // n's int32 bias input dequantized in units of x_scale * w_scale[c].
  std::string dequantize_bias(const onnx::NodeProto& n, int bias, int x_scale, int w_scale);
  // `value_name` quantized with n's inputs scale, scale + 1 as n's output.
  void quantize_output(const onnx::NodeProto& n, const std::string& value_name, int scale);
  // Input `input` of n (a Gemm's or MatMul's B: (N, K) when b_is_nk, else
  // (K, N)) as dense's (N, K) weight where it is a DequantizeLinear of int8
  // integers per output column: the same over the integers laid out (N, K),
  // so that an int8 kernel can take them. Else -1.
  NodeId quantized_dense_weight(const onnx::NodeProto& n, int input, bool b_is_nk);
  // Input x of n less its zero point (input zero_point, per channel along
  // `axis` for a constant), as floats: the new value's name.
  std::string less_zero_point(const onnx::NodeProto& n, int x, int zero_point, int axis);

  // Window attributes shared by Conv and the pools: kernel, strides, pads
  // (top, left, bottom, right), dilations, with auto_pad resolved.
  struct Window {
    int64_t kh, kw, sh = 1, sw = 1, dh = 1, dw = 1, top = 0, left = 0, bottom = 0, right = 0;
  };

  Window window(const onnx::NodeProto& n, const Shape& data, int64_t kh, int64_t kw) const;

  void conv(const onnx::NodeProto& n);

  // Conv with 5-D data and weights (video networks).
  void conv3d(const onnx::NodeProto& n, NodeId x, NodeId w);

  void pool(const onnx::NodeProto& n, bool is_max);

  // A constant's values transformed elementwise (Sub and Div by constants).
  NodeId mapped_constant(const runtime::NDArray& c, const std::string& name, float (*f)(float));

  void gemm(const onnx::NodeProto& n);

  static runtime::NDArray scalar(float v);

  // MatMul as the operators the build compiles: dense for a constant 2-D B
  // (any leading axes of A folded into its rows), else batch_matmul with B
  // transposed (2-D operands as a batch of one).
  void matmul(const onnx::NodeProto& n);

  void clip(const onnx::NodeProto& n);

  // Add, Mul, Sub, Div of tensors with broadcasting (by a constant: an add or
  // a multiply, which fold into the kernel before them).
  void binary(const onnx::NodeProto& n);

  // Max and Min of one or more tensors, pairwise.
  void extremum(const onnx::NodeProto& n);

  void power(const onnx::NodeProto& n);

  void layer_norm(const onnx::NodeProto& n);

  // Arithmetic on known integers (shape computations such as a channel
  // count divided by groups), elementwise with a scalar broadcast.
  void integer_binary(const onnx::NodeProto& n);

  // Reshape's target: 0 copies the input's extent (unless allowzero), -1 is inferred by shape inference.
  void reshape(const onnx::NodeProto& n);

  // A Reshape target with its 0s (copy) and -1 (inferred) resolved for
  // `count` elements of shape `from`.
  Shape resolve_reshape(const onnx::NodeProto& n, const Shape& from, Shape target, int64_t count) const;

  void squeeze_unsqueeze(const onnx::NodeProto& n, bool unsqueeze);

  // Shape -> Gather -> Concat chains over static shapes, folded into integers.
  void shape_op(const onnx::NodeProto& n);

  // ---- selecting, repeating and making tensors (onnx_index_operators.cc) ----

  // One axis's part of a strided slice, resolved: begin in range, end in
  // -1..extent, step non-zero.
  struct AxisRange {
    size_t axis;
    int64_t begin, end, step;
  };
  // x sliced along the given axes (whole along the others); x itself when
  // nothing is cut.
  NodeId slice_node(NodeId x, const std::vector<AxisRange>& ranges, const std::string& name);

  void slice(const onnx::NodeProto& n);

  // Split: a slice per output.
  void split(const onnx::NodeProto& n);

  // Gather with indices known now: of known integers (shape arithmetic),
  // computed; of a float tensor, slices of the axis.
  void gather(const onnx::NodeProto& n);
  void transpose(const onnx::NodeProto& n);
  void gather_elements(const onnx::NodeProto& n);
  void trilu(const onnx::NodeProto& n);
  // ScatterND (reduction none) on tensors known now (a mask a model builds
  // from its shapes, as Swin's shifted windows): computed at import.
  void scatter_nd(const onnx::NodeProto& n);

  void expand(const onnx::NodeProto& n);

  void constant_of_shape(const onnx::NodeProto& n);

  void range(const onnx::NodeProto& n);

  // Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not on
  // known integers (booleans as 0 and 1).
  void integer_logic(const onnx::NodeProto& n);

  // Where with a condition known now.
  void where(const onnx::NodeProto& n);
  // Where as a kernel: a condition known only at run time, or mixing both sides.
  void where_kernel(const onnx::NodeProto& n);

  void cast(const onnx::NodeProto& n);

  // DepthToSpace (DCR or CRD) and SpaceToDepth: a reshape, a transpose, a reshape.
  void depth_space(const onnx::NodeProto& n, bool to_space);

  // Tile: each axis stretched (broadcast_to) between reshapes.
  void tile(const onnx::NodeProto& n);

  // Resize of the last two axes (nearest or linear) to constant scales or sizes.
  void resize(const onnx::NodeProto& n);

  void concat(const onnx::NodeProto& n);

  void pad(const onnx::NodeProto& n);

  // Softmax over the last axis, which the kernels compute: another axis is
  // moved last and back (opset >= 13); before opset 13 the axes from `axis`
  // on were one flattened axis, so the input is reshaped to 2-D and back.
  void softmax(const onnx::NodeProto& n);

  // ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2 over any axes.
  void reduce(const onnx::NodeProto& n);

  void constant(const onnx::NodeProto& n);

  void convert(const onnx::NodeProto& n);

  void convert_op(const onnx::NodeProto& n);

  std::string path_;
  OnnxImportOptions options_;
  onnx::ModelProto model_;
  int64_t opset_ = 0;
  GraphBuilder b_;
  std::map<std::string, Value> values_;
  // constant_of's values of dequantize_per_channel nodes, by node.
  mutable std::map<NodeId, runtime::NDArray> dequantized_;
};

}  // namespace tessera::graph::onnx_importer
