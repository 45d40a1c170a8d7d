// The conv2d_packed.vta template: the seed's knobs, a fallback that fits,
// and every config of a space either computing the reference exactly on
// the simulator or refused with its reason.
#include "autotvm/vta/conv2d_packed.h"

#include <gtest/gtest.h>

#include <random>

#include "tessera/error.h"
#include "vta/simulator.h"

namespace tessera::autotvm::vta {
namespace {

using tessera::vta::Conv2dPackedSchedule;
using tessera::vta::VtaConfig;

ops::Conv2dPackedAttrs conv(int64_t c, int64_t hw, int64_t o, int64_t k, int64_t stride) {
  ops::Conv2dPackedAttrs a;
  a.in_channels = c, a.height = a.width = hw, a.out_channels = o;
  a.kernel_h = a.kernel_w = k, a.stride_h = a.stride_w = stride, a.pad_h = a.pad_w = k / 2;
  a.shift = 10, a.clip_min = 0;
  return a;
}

TEST(VtaConv2dPackedTemplate, TheSpaceHasTheSeedsKnobsAndAFallbackThatFits) {
  const VtaConfig config;
  const ops::Conv2dPackedAttrs layer1 = conv(64, 56, 64, 3, 1);  // ResNet-18's layer1 convolutions
  const ConfigSpace space = conv2d_packed_space(layer1, config);
  std::vector<std::string> names;
  for (const Knob& k : space.knobs()) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tile_h", "tile_w", "tile_ci", "tile_co", "oc_nthread", "h_nthread"}));
  // Divisors: 8 of the 56 rows and columns, 3 of 4 blocks in and out, two thread counts each.
  EXPECT_EQ(space.size(), 8 * 8 * 3 * 3 * 2 * 2);
  // Whole rows, all 4 input blocks (2 streams of 4 x 4 x 58 window elements fill 1856 of the 2048).
  const Conv2dPackedSchedule s = conv2d_packed_schedule(space.fallback());
  EXPECT_EQ(s.to_string(), "tile_h=2 tile_w=56 tile_co=1 tile_ci=4 oc_nthread=1 h_nthread=2");
  for (const auto& a : {conv(256, 14, 512, 1, 2), conv(512, 7, 512, 3, 1), conv(64, 56, 128, 3, 2)}) {
    SCOPED_TRACE(a.to_string());
    EXPECT_EQ(tessera::vta::conv2d_packed_misfit(a, conv2d_packed_schedule(conv2d_packed_space(a, config).fallback()),
                                                 config),
              "");
  }
}

TEST(VtaConv2dPackedTemplate, EveryConfigComputesTheReferenceExactlyOrIsRefusedWithItsReason) {
  const VtaConfig config;
  ops::Conv2dPackedAttrs a = conv(32, 8, 32, 3, 1);
  a.bias = a.residual = true;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(-127, 127), wide(-9000, 9000);
  std::vector<int8_t> data(ops::num_elements(a.data_shape())), weight(ops::num_elements(a.weight_shape()));
  std::vector<int8_t> residual(ops::num_elements(a.output_shape()));
  std::vector<int32_t> bias(a.out_channels);
  for (auto& v : data) v = static_cast<int8_t>(byte(rng));
  for (auto& v : weight) v = static_cast<int8_t>(byte(rng));
  for (auto& v : residual) v = static_cast<int8_t>(byte(rng));
  for (auto& v : bias) v = wide(rng);
  const std::vector<int8_t> want = ops::conv2d_packed_reference(a, data, weight, bias, residual);

  const ConfigSpace space = conv2d_packed_space(a, config);
  int64_t ran = 0, refused = 0;
  for (int64_t i = 0; i < space.size(); ++i) {
    const Conv2dPackedSchedule s = conv2d_packed_schedule(space.get(i));
    SCOPED_TRACE(s.to_string());
    const std::string misfit = tessera::vta::conv2d_packed_misfit(a, s, config);
    if (!misfit.empty()) {
      ++refused;
      EXPECT_THROW(tessera::vta::lower_conv2d_packed(a, s, config), Error);
      continue;
    }
    tessera::vta::Program p = tessera::vta::lower_conv2d_packed(a, s, config);
    tessera::vta::write_conv2d_packed_inputs(p, a, config, data.data(), weight.data(), bias.data(), residual.data());
    tessera::vta::Simulator(config).run(p.instructions, p.dram);
    std::vector<int8_t> got(want.size());
    p.read("output", got.data(), static_cast<int64_t>(got.size()));
    ASSERT_EQ(got, want);
    ++ran;
  }
  // Odd thread counts of two blocks, or tiles with threads past the rows, are refused; most configs run.
  EXPECT_GT(refused, 0);
  EXPECT_GT(ran, space.size() / 2);
}

}  // namespace
}  // namespace tessera::autotvm::vta
