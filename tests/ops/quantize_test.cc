// Quantization's operators: quantize rounds halves to even and saturates as
// ONNX QuantizeLinear does; compiled for the host, quantize, dequantize and
// qlinear_conv2d (int8 storage, int32 arithmetic) equal their references
// exactly; the reference of qlinear_conv2d is within one unit of the same
// convolution computed in real numbers and quantized once.
#include "ops/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "codegen/llvm_codegen.h"
#include "compile/build.h"
#include "graph/builder.h"
#include "graph/interpreter.h"
#include "measure/kernel_args.h"
#include "runtime/graph_executor.h"
#include "codegen/module.h"
#include "measure/storage_arguments.h"
#include "ops/operator.h"
#include "ops/qlinear_add.h"
#include "ops/qlinear_conv2d.h"
#include "ops/reference.h"
#include "target/target.h"
#include "testing/check.h"
#include "tessera/error.h"
#include "tir/hand_written_schedule.h"
#include "tir/lower.h"

namespace tessera::ops {
namespace {

TEST(Quantize, RoundsHalvesToEvenAndSaturates) {
  const std::vector<float> x = {1.25f, 1.75f, -1.25f, -1.75f, 100.0f, -100.0f, 0.0f};
  std::vector<float> q(x.size());
  reference::quantize(x.data(), static_cast<int64_t>(x.size()), {0.5f, 3, "int8"}, q.data());
  // x / 0.5 = 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, -3.5 -> -4; then + 3, within [-128, 127].
  EXPECT_EQ(q, (std::vector<float>{5, 7, 1, -1, 127, -128, 3}));
  reference::quantize(x.data(), static_cast<int64_t>(x.size()), {0.5f, 0, "uint8"}, q.data());
  EXPECT_EQ(q, (std::vector<float>{2, 4, 0, 0, 200, 0, 0}));
  std::vector<float> r(q.size());
  reference::dequantize(q.data(), static_cast<int64_t>(q.size()), {0.5f, 2, "uint8"}, r.data());
  EXPECT_EQ(r, (std::vector<float>{0, 1, -1, -1, 99, -1, -1}));
}

TEST(Quantize, RefusesScalesZeroPointsAndTypesItCannotStore) {
  EXPECT_THROW(QuantizeAttrs({0.0f, 0, "int8"}).validate("quantize"), Error);
  EXPECT_THROW(QuantizeAttrs({NAN, 0, "int8"}).validate("quantize"), Error);
  EXPECT_THROW(QuantizeAttrs({1.0f, 200, "int8"}).validate("quantize"), Error);
  EXPECT_THROW(QuantizeAttrs({1.0f, -1, "uint8"}).validate("quantize"), Error);
  try {
    QuantizeAttrs({1.0f, 0, "int4"}).validate("quantize");
    FAIL() << "int4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int8 or uint8, got dtype int4"), std::string::npos) << e.what();
  }
}

// A workload of one operator call whose inputs are placeholders of the given
// storage types: the reference reads them in dag.placeholders() order.
Workload call_workload(const std::string& name, const Attrs& attrs, const std::vector<Shape>& shapes,
                       const std::vector<ir::DType>& types) {
  const Operator& op = find_operator(name);
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) inputs.push_back(ir::placeholder(shapes[i], "in" + std::to_string(i), types[i]));
  const Shape out = op.infer_shape(shapes, attrs);
  const ir::ComputeDAG dag({op.compute(OperatorCall{attrs, shapes, out, {}}, inputs)});
  std::vector<ir::Tensor> placeholders = dag.placeholders();
  std::vector<size_t> order;
  for (const ir::Tensor& t : inputs)
    order.push_back(static_cast<size_t>(std::find(placeholders.begin(), placeholders.end(), t) - placeholders.begin()));
  Reference ref = [&op, attrs, shapes, out, order](const std::vector<const float*>& in, float* y) {
    std::vector<const float*> ordered;
    for (size_t i : order) ordered.push_back(in.at(i));
    op.reference(OperatorCall{attrs, shapes, out, {}}, ordered, y);
  };
  return Workload{name, dag, ref};
}

double compiled_error(const Workload& w) {
  const testing::CheckResult r =
      testing::check_schedule(w, tir::hand_written_schedule(w.dag, target::Target::host()));
  return r.max_abs_error;
}

// The compiled kernel rounds halves to even too (llvm.roundeven), on values
// that land exactly on halves: random inputs almost never do.
TEST(Quantize, CompiledQuantizeRoundsHalvesToEven) {
  const Workload w = call_workload("quantize", QuantizeAttrs{0.5f, 0, "int8"}, {{8}}, {ir::DType::Float32});
  codegen::Module m = codegen::Module::load_object(
      codegen::compile_to_object(tir::lower(w.dag, tir::hand_written_schedule(w.dag, target::Target::host()), "q"),
                                 target::Target::host()));
  std::vector<runtime::NDArray> in, out;
  in.emplace_back(std::vector<int64_t>{8});
  out.emplace_back(std::vector<int64_t>{8});
  const std::vector<float> x = {0.25f, 0.75f, 1.25f, 1.75f, -0.25f, -0.75f, -1.25f, -1.75f};
  std::copy(x.begin(), x.end(), in[0].data());
  measure::StorageArguments args(w.dag, in, out);
  m.function("q")(args.pointers());
  args.outputs_to_arrays();
  EXPECT_EQ(std::vector<float>(out[0].data(), out[0].data() + 8), (std::vector<float>{0, 2, 2, 4, 0, -2, -2, -4}));
}

TEST(Quantize, CompiledQuantizeAndDequantizeEqualTheReferenceExactly) {
  const Attrs to_int8 = QuantizeAttrs{0.0078125f, -3, "int8"}, to_uint8 = QuantizeAttrs{0.01f, 128, "uint8"};
  for (const Attrs& a : {to_int8, to_uint8}) {
    const Workload q = call_workload("quantize", a, {{2, 3, 7, 9}}, {ir::DType::Float32});
    EXPECT_EQ(q.dag.outputs()[0]->dtype, quantized_type("quantize", a.as<QuantizeAttrs>().dtype));
    EXPECT_EQ(compiled_error(q), 0.0) << a.to_string();
    const Workload d = call_workload("dequantize", a, {{2, 3, 7, 9}},
                                     {quantized_type("dequantize", a.as<QuantizeAttrs>().dtype)});
    EXPECT_EQ(d.dag.outputs()[0]->dtype, ir::DType::Float32);
    EXPECT_EQ(compiled_error(d), 0.0) << a.to_string();
  }
}

// In a network: quantize then dequantize fuse into one kernel (the int8
// value never leaves it) that equals the interpreter exactly; a network
// whose output is quantized is refused in one line (outputs are float32).
TEST(Quantize, AFusedRoundTripCompilesAndAQuantizedOutputIsRefused) {
  graph::GraphBuilder b;
  const graph::NodeId x = b.input("x", {1, 4, 6, 6});
  const QuantizeAttrs a{0.05f, 3, "int8"};
  const graph::NodeId q = b.add_node(graph::Op::named("quantize"), "q", {x}, a);
  const graph::NodeId r = b.add_node(graph::Op::named("dequantize"), "r", {q}, a);
  const graph::Graph round_trip = b.finish({r});
  build::BuildResult built = build::build(round_trip, target::Target::host());
  runtime::GraphExecutor ex(std::move(built.artifact), "round_trip");
  std::vector<runtime::NDArray> inputs;
  inputs.emplace_back(std::vector<int64_t>{1, 4, 6, 6});
  inputs.back().fill_random(2, -8.0f, 8.0f);  // beyond the int8 range too: saturation
  ex.set_input(0, inputs.back());
  ex.run();
  const measure::OutputComparison c = measure::compare_output(ex.get_output(0), graph::interpret(round_trip, inputs)[0], 0.0);
  EXPECT_TRUE(c.ok) << c.describe();

  graph::GraphBuilder b2;
  const graph::NodeId x2 = b2.input("x", {1, 4, 6, 6});
  const graph::Graph leaves = b2.finish({b2.add_node(graph::Op::named("quantize"), "q", {x2}, a)});
  try {
    build::build(leaves, target::Target::host());
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("('q') is an output stored as int8: outputs are float32 (dequantize it)"),
              std::string::npos)
        << e.what();
  }
}

struct QConvCase {
  Shape x, w;
  Conv2dAttrs conv;
  std::string x_dtype, y_dtype;
  int64_t x_zp, y_zp;
  bool relu;
};

std::vector<QConvCase> qconv_cases() {
  Conv2dAttrs asymmetric = Conv2dAttrs::symmetric(1, 0);
  asymmetric.pad_top = 2, asymmetric.pad_left = 0, asymmetric.pad_bottom = 1, asymmetric.pad_right = 1;
  return {
      {{1, 8, 9, 9}, {16, 8, 3, 3}, Conv2dAttrs::symmetric(1, 1), "uint8", "uint8", 128, 5, true},
      {{2, 6, 11, 10}, {12, 6, 3, 3}, Conv2dAttrs::symmetric(2, 1), "int8", "int8", -4, 0, false},
      {{1, 16, 7, 7}, {24, 16, 1, 1}, Conv2dAttrs::symmetric(1, 0), "uint8", "int8", 0, -10, false},
      {{1, 4, 10, 8}, {8, 4, 3, 3}, asymmetric, "int8", "uint8", 7, 120, true},
      {{1, 4, 12, 12}, {8, 4, 3, 3}, Conv2dAttrs::symmetric(1, 2, 2), "uint8", "uint8", 3, 128, false},
  };
}

QLinearConv2dAttrs qconv_attrs(const QConvCase& c) {
  QLinearConv2dAttrs a;
  a.conv = c.conv;
  a.x_scale = 0.02f, a.y_scale = 9.0f;
  a.x_zero_point = c.x_zp, a.y_zero_point = c.y_zp;
  a.x_dtype = c.x_dtype, a.y_dtype = c.y_dtype;
  a.relu = c.relu;
  return a;
}

// The reference against the convolution in real numbers (double): the
// dequantized input and weight, the bias in x_scale * w_scale units,
// quantized once at the end. Rounding the accumulator to float and the
// multiplier's order may move a value that lands near a half by one unit.
TEST(QLinearConv2d, ReferenceIsTheRealConvolutionQuantizedWithinOneUnit) {
  std::mt19937 rng(5);
  for (const QConvCase& c : qconv_cases()) {
    const QLinearConv2dAttrs a = qconv_attrs(c);
    const ir::DType xt = quantized_type("test", c.x_dtype), yt = quantized_type("test", c.y_dtype);
    std::uniform_int_distribution<int> xq(static_cast<int>(quantized_min(xt)), static_cast<int>(quantized_max(xt)));
    std::uniform_int_distribution<int> wq(-127, 127), bq(-2000, 2000);
    std::uniform_real_distribution<float> ws(0.001f, 0.02f);
    std::vector<float> x(num_elements(c.x)), w(num_elements(c.w)), w_scale(c.w[0]), bias(c.w[0]);
    for (float& v : x) v = static_cast<float>(xq(rng));
    for (float& v : w) v = static_cast<float>(wq(rng));
    for (float& v : w_scale) v = ws(rng);
    for (float& v : bias) v = static_cast<float>(bq(rng));
    const Shape os = qlinear_conv2d_output_shape(c.x, c.w, {c.w[0]}, {c.w[0]}, a);
    std::vector<float> got(num_elements(os));
    reference::qlinear_conv2d_nchw(x.data(), c.x, w.data(), c.w, w_scale.data(), bias.data(), a, got.data());

    // Real numbers: the direct convolution of (x - x_zp) and w (padding is a real 0).
    std::vector<float> xr(x.size()), real(got.size());
    for (size_t i = 0; i < x.size(); ++i) xr[i] = x[i] - static_cast<float>(c.x_zp);
    reference::conv2d_nchw(xr.data(), c.x, w.data(), c.w, c.conv, real.data());
    const int64_t per_channel = os[2] * os[3];
    int off_by_one = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t f = (static_cast<int64_t>(i) / per_channel) % os[1];
      const double acc = static_cast<double>(real[i]) + bias[f];  // exact: integers below 2^24
      double want = std::nearbyint(acc * a.x_scale * w_scale[f] / a.y_scale) + c.y_zp;
      const double lo = c.relu ? std::max<double>(c.y_zp, quantized_min(yt)) : quantized_min(yt);
      want = std::min<double>(std::max(want, lo), quantized_max(yt));
      ASSERT_LE(std::fabs(got[i] - want), 1.0) << "element " << i;
      off_by_one += got[i] != want;
    }
    EXPECT_LE(off_by_one, static_cast<int>(got.size()) / 50 + 1);
  }
}

TEST(QLinearConv2d, CompiledForTheHostEqualsTheReferenceExactly) {
  for (const QConvCase& c : qconv_cases()) {
    const QLinearConv2dAttrs a = qconv_attrs(c);
    const Workload w = call_workload(
        "qlinear_conv2d", a, {c.x, c.w, {c.w[0]}, {c.w[0]}},
        {quantized_type("test", c.x_dtype), ir::DType::Int8, ir::DType::Float32, ir::DType::Int32});
    EXPECT_EQ(w.dag.outputs()[0]->dtype, quantized_type("test", c.y_dtype));
    EXPECT_EQ(compiled_error(w), 0.0) << a.to_string();
  }
}

// Seed 003's VTA quantization: every scale a power of two, so the multiplier
// is 2^-7 here and the total is requantized by (total + 64) >> 7, halves
// rounded up (not to even), in the reference and the compiled kernel alike;
// both against that formula computed here.
TEST(QLinearConv2d, PowerOfTwoScalesRequantizeByARoundingShift) {
  QLinearConv2dAttrs a;
  a.conv = Conv2dAttrs::symmetric(1, 1);
  a.x_scale = a.y_scale = 0.0625f;  // 2^-4: the seed's global scale 8 over 128
  a.x_dtype = a.y_dtype = "int8";
  a.power_of_two = true;
  const Shape xs{1, 16, 12, 12}, ws{16, 16, 3, 3};
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(-128, 127), bq(-3000, 3000);
  runtime::NDArray x(xs), w(ws), w_scale(Shape{16}), bias(Shape{16});
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(byte(rng));
  for (int64_t i = 0; i < w.size(); ++i) w.data()[i] = static_cast<float>(std::max(-127, byte(rng)) / 4);
  for (int64_t i = 0; i < 16; ++i) w_scale.data()[i] = 0.0078125f, bias.data()[i] = static_cast<float>(bq(rng));
  const Shape os = qlinear_conv2d_output_shape(xs, ws, {16}, {16}, a);
  std::vector<float> reference_out(num_elements(os));
  reference::qlinear_conv2d_nchw(x.data(), xs, w.data(), ws, w_scale.data(), bias.data(), a, reference_out.data());

  const Workload wl = call_workload("qlinear_conv2d", a, {xs, ws, {16}, {16}},
                                    {ir::DType::Int8, ir::DType::Int8, ir::DType::Float32, ir::DType::Int32});
  codegen::Module m = codegen::Module::load_object(codegen::compile_to_object(
      tir::lower(wl.dag, tir::hand_written_schedule(wl.dag, target::Target::host()), "qconv"), target::Target::host()));
  std::vector<runtime::NDArray> in, out;
  const runtime::NDArray* by_name[] = {&x, &w, &w_scale, &bias};  // in0..in3, in the DAG's placeholder order
  for (const ir::Tensor& t : wl.dag.placeholders()) in.push_back(runtime::copy_of(*by_name[t->name.back() - '0']));
  out.emplace_back(os);
  measure::StorageArguments args(wl.dag, in, out);
  m.function("qconv")(args.pointers());
  args.outputs_to_arrays();

  std::vector<float> real(reference_out.size());
  reference::conv2d_nchw(x.data(), xs, w.data(), ws, a.conv, real.data());
  int halves = 0, negative_halves = 0;
  for (size_t i = 0; i < real.size(); ++i) {
    const auto total = static_cast<int64_t>(real[i]) + static_cast<int64_t>(bias.data()[i / (os[2] * os[3])]);
    const double want = std::clamp<double>(std::floor((total + 64) / 128.0), -128, 127);
    halves += total % 128 == 64 || total % 128 == -64;
    negative_halves += total < 0 && total % 128 == -64 && want > -128;
    ASSERT_EQ(reference_out[i], want) << "element " << i << ", total " << total;
    ASSERT_EQ(out[0].data()[i], want) << "element " << i << ", total " << total;
  }
  EXPECT_GT(negative_halves, 0);  // where halves to even would round down (-1.5 -> -2, not -1)
  EXPECT_GT(halves, negative_halves);
  a.x_scale = 0.05f;  // no longer a power of two
  std::vector<float> refused(reference_out.size());
  EXPECT_THROW(
      reference::qlinear_conv2d_nchw(x.data(), xs, w.data(), ws, w_scale.data(), bias.data(), a, refused.data()),
      Error);
}

TEST(QLinearConv2d, RefusesWhatItCannotCompute) {
  QLinearConv2dAttrs a;
  a.conv.groups = 2;
  EXPECT_THROW(qlinear_conv2d_output_shape({1, 8, 5, 5}, {8, 4, 3, 3}, {8}, {8}, a), Error);
  a = QLinearConv2dAttrs{};
  EXPECT_THROW(qlinear_conv2d_output_shape({1, 8, 5, 5}, {8, 8, 3, 3}, {4}, {8}, a), Error);  // w_scale
  EXPECT_THROW(qlinear_conv2d_output_shape({1, 8, 5, 5}, {8, 8, 3, 3}, {8}, {1}, a), Error);  // bias
  a.y_zero_point = 300;
  EXPECT_THROW(qlinear_conv2d_output_shape({1, 8, 5, 5}, {8, 8, 3, 3}, {8}, {8}, a), Error);
}

// qlinear_add in fixed point: within one step of the sum computed in real
// numbers (the multipliers' 2^-shift and halves rounding up), exactly equal
// compiled (both integer arithmetic), and its ReLU saturates at y's zero point.
TEST(QLinearAdd, IsTheRealSumWithinOneStepAndCompilesExactly) {
  QLinearAddAttrs a;
  a.a = {0.031f, 12, "uint8"};
  a.b = {0.017f, -3, "int8"};
  a.y = {0.04f, 100, "uint8"};
  const AddMultipliers m = add_multipliers(a);
  EXPECT_GE(m.shift, 16);
  const int64_t n = 513;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> ua(0, 255), sb(-128, 127);
  std::vector<float> x(n), y(n), got(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(ua(rng)), y[i] = static_cast<float>(sb(rng));
  for (bool relu : {false, true}) {
    a.relu = relu;
    reference::qlinear_add(x.data(), y.data(), n, a, got.data());
    for (int64_t i = 0; i < n; ++i) {
      const double real = ((x[i] - 12.0) * 0.031f + (y[i] + 3.0) * 0.017f) / 0.04f + 100.0;
      const double want = std::clamp(std::round(real), relu ? 100.0 : 0.0, 255.0);
      ASSERT_LE(std::fabs(got[i] - want), 1.0) << i;
    }
    const Workload w = call_workload("qlinear_add", a, {{n}, {n}}, {ir::DType::UInt8, ir::DType::Int8});
    EXPECT_EQ(compiled_error(w), 0.0) << a.to_string();
  }
  // Every saturating case: huge sums, both ends.
  EXPECT_THROW((find_operator("qlinear_add").infer_shape({{4}, {5}}, a)), Error);
  QLinearAddAttrs extreme = a;
  extreme.y.scale = 1e-6f;  // ratios beyond 32-bit fixed point
  EXPECT_THROW(add_multipliers(extreme), Error);
}

}  // namespace
}  // namespace tessera::ops
