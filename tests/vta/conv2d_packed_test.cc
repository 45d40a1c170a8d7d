// conv2d_packed: its reference against the registry's fp32 convolution, and
// the VTA program lower_conv2d_packed makes, run on the simulator, against
// the reference bit for bit, for every kind of tile, stride, padding,
// residual and virtual-thread count.
#include "vta/conv2d_packed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ops/conv2d.h"
#include "ops/operator.h"
#include "tessera/error.h"
#include "vta/simulator.h"

namespace tessera::vta {
namespace {

using ops::Conv2dPackedAttrs;

ops::Conv2dPackedAttrs conv(int64_t c, int64_t hw, int64_t o, int64_t k, int64_t stride, int64_t pad) {
  Conv2dPackedAttrs a;
  a.in_channels = c, a.height = a.width = hw, a.out_channels = o;
  a.kernel_h = a.kernel_w = k, a.stride_h = a.stride_w = stride, a.pad_h = a.pad_w = pad;
  return a;
}

struct Tensors {
  std::vector<int8_t> data, weight;
  std::vector<int32_t> bias;
  std::vector<int8_t> residual;
};

// Data and weights in [-magnitude, magnitude], biases of about the sums'
// size (`bias_magnitude`), residuals over all of int8.
Tensors random_tensors(const Conv2dPackedAttrs& a, int magnitude, int bias_magnitude, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(-magnitude, magnitude), wide(-bias_magnitude, bias_magnitude), any(-128, 127);
  Tensors t;
  t.data.resize(ops::num_elements(a.data_shape()));
  t.weight.resize(ops::num_elements(a.weight_shape()));
  for (auto& v : t.data) v = static_cast<int8_t>(byte(rng));
  for (auto& v : t.weight) v = static_cast<int8_t>(byte(rng));
  t.bias.resize(a.out_channels);
  for (auto& v : t.bias) v = wide(rng);
  t.residual.resize(ops::num_elements(a.output_shape()));
  for (auto& v : t.residual) v = static_cast<int8_t>(any(rng));
  return t;
}

struct SimulatedRun {
  std::vector<int8_t> output;
  SimulationStats stats;
};

SimulatedRun simulate(const Conv2dPackedAttrs& a, const Conv2dPackedSchedule& s, const Tensors& t) {
  const VtaConfig config;
  Program p = lower_conv2d_packed(a, s, config);
  write_conv2d_packed_inputs(p, a, config, t.data.data(), t.weight.data(), t.bias.data(), t.residual.data());
  SimulatedRun r;
  r.stats = Simulator(config).run(p.instructions, p.dram);
  r.output.resize(ops::num_elements(a.output_shape()));
  p.read("output", r.output.data(), static_cast<int64_t>(r.output.size()));
  return r;
}

// The packed tensors in NCHW / OIHW floats (blocks of batch 1).
std::vector<float> unpack(const std::vector<int8_t>& packed, const ops::Shape& s) {
  const int64_t C = s[1] * s[5], H = s[2], W = s[3];
  std::vector<float> out(packed.size());
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
          out[((n * C + c) * H + y) * W + x] = packed[(((n * s[1] + c / s[5]) * H + y) * W + x) * s[5] + c % s[5]];
  return out;
}

std::vector<float> unpack_weight(const std::vector<int8_t>& packed, const ops::Shape& s) {
  const int64_t O = s[0] * s[4], C = s[1] * s[5], KH = s[2], KW = s[3];
  std::vector<float> out(packed.size());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < KH; ++y)
        for (int64_t x = 0; x < KW; ++x)
          out[((o * C + c) * KH + y) * KW + x] =
              packed[((((o / s[4]) * s[1] + c / s[5]) * KH + y) * KW + x) * s[4] * s[5] + (o % s[4]) * s[5] + c % s[5]];
  return out;
}

TEST(Conv2dPacked, ReferenceIsTheConvolutionShiftedAndClipped) {
  // Small values keep every sum exact in fp32, so the registry's convolution
  // is an independent witness of the packed reference's indexing.
  for (const auto& [a, shift, lo, hi, residual] : {std::tuple{conv(32, 9, 32, 3, 1, 1), 4, -128, 127, false},
                                                   std::tuple{conv(16, 10, 48, 3, 2, 1), 0, -128, 127, true},
                                                   std::tuple{conv(48, 7, 16, 1, 2, 0), 3, 0, 127, true}}) {
    Conv2dPackedAttrs attrs = a;
    attrs.bias = true;
    attrs.shift = shift, attrs.clip_min = lo, attrs.clip_max = hi;
    attrs.residual = residual, attrs.residual_clip_min = 0;  // a ReLU after the residual add
    SCOPED_TRACE(attrs.to_string());
    const Tensors t = random_tensors(attrs, 20, 2000, 7);
    const std::vector<int8_t> got = conv2d_packed_reference(attrs, t.data, t.weight, t.bias, t.residual);

    const ops::Operator& conv2d = ops::find_operator("conv2d");
    const ops::Attrs conv_attrs = ops::Conv2dAttrs::symmetric(attrs.stride_h, attrs.pad_h);
    const ops::Shape x{attrs.batch, attrs.in_channels, attrs.height, attrs.width};
    const ops::Shape w{attrs.out_channels, attrs.in_channels, attrs.kernel_h, attrs.kernel_w};
    const ops::Shape y{attrs.batch, attrs.out_channels, attrs.out_height(), attrs.out_width()};
    const std::vector<float> xf = unpack(t.data, attrs.data_shape()),
                             wf = unpack_weight(t.weight, attrs.weight_shape());
    std::vector<float> yf(ops::num_elements(y));
    conv2d.reference(ops::OperatorCall{conv_attrs, {x, w}, y, {false, true}}, {xf.data(), wf.data()}, yf.data());

    const ops::Shape os = attrs.output_shape();
    int64_t clipped = 0;
    for (int64_t o = 0; o < attrs.out_channels; ++o)
      for (int64_t r = 0; r < os[2]; ++r)
        for (int64_t c = 0; c < os[3]; ++c) {
          const int64_t at = (((o / 16) * os[2] + r) * os[3] + c) * 16 + o % 16;
          const double v =
              std::floor((yf[(o * os[2] + r) * os[3] + c] + t.bias[o] + (shift ? 1 << (shift - 1) : 0)) / (1 << shift));
          double want = std::clamp(v, double(lo), double(hi));
          clipped += want != v;
          if (residual) want = std::clamp(want + t.residual[at], 0.0, 127.0);
          ASSERT_EQ(got[at], want) << "channel " << o << " at " << r << ", " << c;
        }
    EXPECT_GT(clipped, 0);  // the clip is exercised
  }
}

struct Case {
  Conv2dPackedAttrs attrs;  // its shift set by the test, from the data's spread
  Conv2dPackedSchedule schedule;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  Conv2dPackedAttrs a = conv(64, 14, 64, 3, 1, 1);
  a.bias = true, a.clip_min = 0;                                                // a convolution with its bias and ReLU
  out.push_back({a, {}});                                                       // one tile product at a time
  out.push_back({a, {.tile_h = 7, .tile_w = 14, .tile_co = 2, .tile_ci = 2}});  // a few big tiles
  out.push_back({a, {.tile_h = 7, .tile_w = 7, .tile_co = 1, .tile_ci = 4, .oc_nthread = 2}});
  out.push_back({a, {.tile_h = 7, .tile_w = 14, .tile_co = 1, .tile_ci = 1, .oc_nthread = 2, .h_nthread = 2}});
  Conv2dPackedAttrs strided = conv(32, 15, 48, 3, 2, 1);  // odd image: the last window pads one side
  out.push_back({strided, {.tile_h = 4, .tile_w = 8, .tile_co = 3, .tile_ci = 2}});
  out.push_back({strided, {.tile_h = 2, .tile_w = 4, .tile_co = 1, .tile_ci = 1, .h_nthread = 2}});
  Conv2dPackedAttrs pointwise = conv(64, 14, 128, 1, 2, 0);  // ResNet's downsampling shortcut
  out.push_back({pointwise, {.tile_h = 7, .tile_w = 7, .tile_co = 4, .tile_ci = 4, .oc_nthread = 2}});
  Conv2dPackedAttrs residual = conv(32, 8, 32, 3, 1, 1);  // a residual block's second convolution
  residual.bias = residual.residual = true, residual.residual_clip_min = 0;
  out.push_back({residual, {.tile_h = 4, .tile_w = 8, .tile_co = 1, .tile_ci = 2, .oc_nthread = 2}});
  out.push_back({residual, {.tile_h = 8, .tile_w = 8, .tile_co = 2, .tile_ci = 1}});
  Conv2dPackedAttrs batched = conv(16, 6, 32, 3, 1, 1);
  batched.batch = 2;
  out.push_back({batched, {.tile_h = 3, .tile_w = 6, .tile_co = 1, .tile_ci = 1, .h_nthread = 2}});
  return out;
}

// The shift that leaves most outputs of full-range random data inside int8:
// the sums' spread is about sqrt(terms) x 127^2 / 3.
int spread_shift(const Conv2dPackedAttrs& a) {
  const double spread = std::sqrt(double(a.in_channels * a.kernel_h * a.kernel_w)) * 127.0 * 127.0 / 3.0;
  return std::clamp(static_cast<int>(std::ceil(std::log2(spread / 48.0))), 0, 15);
}

TEST(Conv2dPacked, EverySimulatedScheduleEqualsTheReferenceBitForBit) {
  uint32_t seed = 1;
  for (Case c : cases()) {
    c.attrs.shift = spread_shift(c.attrs);
    SCOPED_TRACE(c.attrs.to_string() + " with " + c.schedule.to_string());
    const Tensors t = random_tensors(c.attrs, 127, 1 << (c.attrs.shift + 6), seed++);
    const SimulatedRun run = simulate(c.attrs, c.schedule, t);
    const std::vector<int8_t> want = conv2d_packed_reference(c.attrs, t.data, t.weight, t.bias, t.residual);
    ASSERT_EQ(run.output, want);
    // Every output value is not one clip bound: the data exercise the arithmetic.
    EXPECT_GT(
        std::count_if(want.begin(), want.end(), [&](int8_t v) { return v > -128 && v > c.attrs.clip_min && v < 127; }),
        static_cast<int64_t>(want.size() / 4));
    EXPECT_EQ(run.stats.gemm_macs, c.attrs.macs());
    EXPECT_EQ(run.stats.bytes_stored, static_cast<int64_t>(want.size()));
    const int64_t threads = c.schedule.oc_nthread * c.schedule.h_nthread;
    // Each tile loads its window and weights once per input chunk, nothing more.
    const int64_t co_tiles = c.attrs.out_channels / 16 / c.schedule.tile_co;
    const int64_t tiles = co_tiles * (c.attrs.out_height() / c.schedule.tile_h) *
                          (c.attrs.out_width() / c.schedule.tile_w) * c.attrs.batch;
    EXPECT_EQ(run.stats.bytes_loaded.at(BufferId::Wgt),
              tiles * c.attrs.kernel_h * c.attrs.kernel_w * c.attrs.in_channels / 16 * c.schedule.tile_co * 256);
    EXPECT_GE(threads, 1);
  }
}

// dense_packed: the classifier's matrix product on the accelerator, against
// the plain product computed here, under a few schedules of its space.
TEST(Conv2dPacked, DensePackedIsTheMatrixProduct) {
  Conv2dPackedAttrs a = ops::dense_packed_attrs(1, 512, 64);
  a.bias = true, a.shift = 13;
  const Tensors t = random_tensors(a, 127, 1 << 16, 21);
  for (const Conv2dPackedSchedule& s : {Conv2dPackedSchedule{}, Conv2dPackedSchedule{.tile_co = 2, .tile_ci = 32},
                                        Conv2dPackedSchedule{.tile_co = 1, .tile_ci = 8, .oc_nthread = 2}}) {
    SCOPED_TRACE(s.to_string());
    const SimulatedRun run = simulate(a, s, t);
    for (int64_t m = 0; m < 64; ++m) {
      int64_t sum = t.bias[m];
      for (int64_t k = 0; k < 512; ++k)  // data (1, 32, 1, 1, 1, 16), weight (4, 32, 1, 1, 16, 16)
        sum += int64_t{t.data[k]} * t.weight[((m / 16) * 32 + k / 16) * 256 + (m % 16) * 16 + k % 16];
      const int64_t want = std::clamp<int64_t>((sum + (1 << 12)) >> 13, -128, 127);
      ASSERT_EQ(run.output[m], want) << "feature " << m;
    }
  }
}

TEST(Conv2dPacked, TimingOnlyCountsWhatTheFunctionalRunCounts) {
  const Case c = cases()[3];
  const Tensors t = random_tensors(c.attrs, 127, 1000, 3);
  const SimulationStats functional = simulate(c.attrs, c.schedule, t).stats;
  const VtaConfig config;
  Program p = lower_conv2d_packed(c.attrs, c.schedule, config);
  const SimulationStats timing = Simulator(config).run(p.instructions, p.dram, Execution::TimingOnly);
  EXPECT_EQ(timing.cycles, functional.cycles);
  EXPECT_EQ(timing.gemm_macs, functional.gemm_macs);
  EXPECT_EQ(timing.bytes_loaded, functional.bytes_loaded);
  EXPECT_EQ(timing.bytes_stored, functional.bytes_stored);
  EXPECT_EQ(timing.compute.busy_cycles, functional.compute.busy_cycles);
  // Nothing was stored: the output region is still zero.
  std::vector<int8_t> output(ops::num_elements(c.attrs.output_shape()));
  p.read("output", output.data(), static_cast<int64_t>(output.size()));
  EXPECT_TRUE(std::all_of(output.begin(), output.end(), [](int8_t v) { return v == 0; }));
}

TEST(Conv2dPacked, VirtualThreadsOverlapLoadsWithTheGemm) {
  // The seed's 28x28 3x3 layer: with one stream the load module waits for
  // every GEMM (and the GEMM for every load); two streams run the next
  // chunk's loads during this one's GEMM. The data move the same bytes.
  Conv2dPackedAttrs a = conv(128, 28, 128, 3, 1, 1);
  a.shift = 8, a.clip_min = 0;
  const VtaConfig config;
  const auto time = [&](const Conv2dPackedSchedule& s) {
    Program p = lower_conv2d_packed(a, s, config);
    return Simulator(config).run(p.instructions, p.dram, Execution::TimingOnly);
  };
  const SimulationStats one = time({.tile_h = 7, .tile_w = 14, .tile_co = 2, .tile_ci = 1});
  const SimulationStats two = time({.tile_h = 7, .tile_w = 14, .tile_co = 2, .tile_ci = 1, .h_nthread = 2});
  EXPECT_EQ(one.gemm_cycles, two.gemm_cycles);
  EXPECT_EQ(one.bytes_loaded.at(BufferId::Inp), two.bytes_loaded.at(BufferId::Inp));
  EXPECT_EQ(one.bytes_loaded.at(BufferId::Wgt), two.bytes_loaded.at(BufferId::Wgt));
  // Serial: every module's work adds up. Overlapped: the program takes little
  // more than its busiest module.
  EXPECT_GE(one.cycles, (one.load.busy_cycles + one.compute.busy_cycles) * 9 / 10);
  EXPECT_LT(two.cycles, one.cycles * 3 / 4);
  EXPECT_LT(two.cycles, std::max(two.load.busy_cycles, two.compute.busy_cycles) * 6 / 5);
  EXPECT_GT(two.gemm_utilisation(), one.gemm_utilisation());
}

TEST(Conv2dPacked, ASchedulesThatDoesNotFitIsNamedWithItsReason) {
  Conv2dPackedAttrs a = conv(64, 14, 64, 3, 1, 1);
  const VtaConfig config;
  EXPECT_EQ(conv2d_packed_misfit(a, {.tile_h = 7, .tile_w = 14, .tile_co = 2, .tile_ci = 2}, config), "");
  EXPECT_NE(conv2d_packed_misfit(a, {.tile_h = 5}, config).find("tile_h x h_nthread does not divide the 14"),
            std::string::npos);
  EXPECT_NE(conv2d_packed_misfit(a, {.tile_co = 1, .oc_nthread = 3}, config).find("does not divide the 4 output"),
            std::string::npos);
  // 4 threads of 16x16 windows (a 14x14 tile's) of 4 channel blocks: 4 x 4 x 16 x 16 input elements.
  EXPECT_NE(conv2d_packed_misfit(a, {.tile_h = 14, .tile_w = 14, .tile_co = 1, .tile_ci = 4, .oc_nthread = 4}, config)
                .find("the input windows take 4096 elements of a buffer of 2048"),
            std::string::npos);
  try {
    lower_conv2d_packed(a, {.tile_w = 3}, config);
    FAIL() << "lowered a tile that does not divide the image";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_packed data=[1, 4, 14, 14, 1, 16]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tile_w=3"), std::string::npos) << e.what();
  }
  Conv2dPackedAttrs bad = a;
  bad.in_channels = 40;
  EXPECT_THROW(lower_conv2d_packed(bad, {}, config), Error);
}

}  // namespace
}  // namespace tessera::vta
