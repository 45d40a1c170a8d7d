#pragma once
// Helpers shared by the operator declarations: argument checks that throw a
// one-line tessera::Error, fresh stage names, index arithmetic that keeps
// printouts free of "*1" and "+0", and binding a reference to a DAG's inputs.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/compute_dag.h"
#include "ir/tensor.h"
#include "ops/workload.h"

namespace tessera::ops {

using Shape = std::vector<int64_t>;

// "[1, 3, 224, 224]"
std::string shape_to_string(const Shape& shape);
int64_t num_elements(const Shape& shape);
// The coordinates of element `index` of a row-major tensor of `shape`.
void unravel(int64_t index, const Shape& shape, std::vector<int64_t>& coord);
// The row-major offset in `operand` of the element NumPy broadcasting reads
// at output coordinates `coord`: axes aligned at the last, extents of 1
// stretched.
int64_t broadcast_offset(const Shape& operand, const std::vector<int64_t>& coord);
// A number as attributes print it: "6", "0.5", "1e-05".
std::string number_to_string(double value);

// Throws Error("<op>: <message>").
[[noreturn]] void fail(const std::string& op, const std::string& message);
// "<op>: <arg> must have rank <rank>, got [..]"
void check_rank(const std::string& op, const std::string& arg, const Shape& shape, size_t rank);
void check_dims_positive(const std::string& op, const std::string& arg, const Shape& shape);
void check_positive(const std::string& op, const std::string& arg, int64_t value);
void check_non_negative(const std::string& op, const std::string& arg, int64_t value);

// Shape inference's checks (Operator::infer_shape): the caller names the
// node, so these messages start with the argument.
[[noreturn]] void shape_error(const std::string& message);
// An axis in [-rank, rank) as a position in [0, rank).
int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what);
void require_rank(const std::string& arg, const Shape& shape, size_t rank);
void require_positive(const std::string& what, int64_t value);
void require_non_negative(const std::string& what, int64_t value);
// Positions of the channel, height and width axes of a 4-D activation layout
// (NCHW or NHWC; throws for others).
struct SpatialAxes {
  size_t c, h, w;
};
SpatialAxes spatial_axes(const std::string& layout);

// Output extent of a sliding window over one spatial axis:
//   (in + pad_before + pad_after - dilation*(kernel-1) - 1) / stride + 1.
// Throws when the dilated kernel is larger than the padded input.
int64_t window_output_extent(const std::string& op, const std::string& axis, int64_t in,
                             int64_t pad_before, int64_t pad_after, int64_t kernel,
                             int64_t stride, int64_t dilation);

// `base` when no tensor upstream of `inputs` (inclusive) is called so, else the
// first free of base_1, base_2, ...: compute stages of one DAG need unique names.
std::string unique_name(const std::string& base, const std::vector<ir::Tensor>& inputs);

// index*factor, written as plain `index` when factor is 1.
ir::Expr scaled(const ir::Expr& index, int64_t factor);
// a + b, dropping a literal zero on either side.
ir::Expr plus(const ir::Expr& a, const ir::Expr& b);
// a - offset, written as plain `a` when offset is 0.
ir::Expr minus(const ir::Expr& a, int64_t offset);
std::vector<ir::Expr> to_exprs(const std::vector<ir::Var>& vars);
// Output axis names "ax0", "ax1", ... as TVM names them for injective ops.
std::vector<std::string> ax_names(size_t rank);

// A reference written for its inputs in the order `inputs` (the order the
// builder created the placeholders), adapted to dag.placeholders() order.
Reference bind_reference(const ir::ComputeDAG& dag, const std::vector<ir::Tensor>& inputs,
                         Reference in_creation_order);

}  // namespace tessera::ops
