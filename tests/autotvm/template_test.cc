// The x86 templates: every sampled config of every space (and the fallback)
// lowers, compiles and matches the reference; fallbacks are the hand-written
// schedules; the registry and tasks behave as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <random>
#include <tuple>

#include "autotvm/task.h"
#include "schedule/manual_schedule.h"
#include "tessera/error.h"
#include "testing/check.h"

namespace tessera::autotvm {
namespace {

ops::OpArgs args(ops::Shape input, ops::Shape weight, int64_t stride = 1, int64_t pad = 0, bool epilogue = false) {
  ops::OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.stride = stride;
  a.pad = pad;
  a.bias = a.relu = epilogue;
  return a;
}

// The host with the vector unit of AVX2 (256 bits, 16 registers) or AVX-512
// (512, 32): the spaces and schedules of either width, compiled for (and run
// on) whatever this machine is; LLVM splits vectors wider than the host's.
target::Target host_with_width(int bits) {
  target::Target t = target::Target::host();
  t.vector_bits = bits;
  t.vector_registers = bits >= 512 ? 32 : 16;
  t.isa = bits >= 512 ? "avx512" : "avx2";
  return t;
}
const int kWidths[] = {256, 512};

// `config` of `task` lowers, compiles and matches the reference.
void expect_config_matches(const Task& task, const ConfigEntity& config) {
  schedule::Trace trace = task.instantiate(config);
  SCOPED_TRACE(task.describe() + " " + config.str() + "\n" + trace.dump());
  auto r = testing::check_schedule(task.workload, trace, 2);
  EXPECT_LE(r.max_rel_error, 1e-4) << r.lowered;
}

// Each knob's candidates by name.
std::map<std::string, std::vector<nlohmann::json>> knob_candidates(const Task& task) {
  std::map<std::string, std::vector<nlohmann::json>> knobs;
  for (const auto& k : task.space.knobs()) knobs[k.name] = k.candidates;
  return knobs;
}

// Every config of `task` among the fallback and 15 sampled uniformly (fixed
// seed) lowers, compiles and matches the reference, for each vector width.
void expect_sampled_configs_match(const std::string& op, const ops::OpArgs& a, const std::string& tmpl, int seed) {
  for (int bits : kWidths) {
  SCOPED_TRACE("vector width " + std::to_string(bits));
  Task task = create_task(op, a, host_with_width(bits));
  EXPECT_EQ(task.name(), tmpl);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, task.space.size() - 1);
  std::vector<ConfigEntity> configs = {task.space.fallback()};
  for (int i = 0; i < 15; ++i) configs.push_back(task.space.get(pick(rng)));
  for (const auto& config : configs) {
    expect_config_matches(task, config);
  }
  }
}

// Two small shapes per template: one plain, one with odd sizes, stride 2 or an
// epilogue.
TEST(AutotvmTemplate, Conv2dNchwcSampledConfigsMatchReference) {
  expect_sampled_configs_match("conv2d", args({1, 16, 10, 10}, {32, 16, 3, 3}, 1, 1), "conv2d_NCHWc.x86", 1);
  expect_sampled_configs_match("conv2d", args({1, 8, 13, 11}, {24, 8, 3, 3}, 2, 1, true), "conv2d_NCHWc.x86", 2);
}

TEST(AutotvmTemplate, Conv2dNchwc1x1SampledConfigsMatchReference) {
  expect_sampled_configs_match("conv2d", args({1, 32, 7, 9}, {16, 32, 1, 1}), "conv2d_NCHWc_1x1.x86", 3);
  expect_sampled_configs_match("conv2d", args({1, 16, 13, 13}, {32, 16, 1, 1}, 2, 0, true), "conv2d_NCHWc_1x1.x86", 4);
}

// Configs of `task` with several output-channel chunks per register tile
// (tile_oc 2 and 4), one and two rows (`rows` gives each template's tile_oh
// value), the other knobs cycled, match the reference.
void expect_tile_oc_configs_match(const Task& task, const std::vector<nlohmann::json>& rows) {
  auto knobs = knob_candidates(task);  // a knob the template lacks: no candidates
  const auto orders = knobs["reorder_inner"], fuses = knobs["parallel_fuse"], pads = knobs["pad"];
  ASSERT_EQ(knobs["tile_oc"], (std::vector<nlohmann::json>{1, 2, 4}));
  size_t n = 0;
  for (int chunks : {2, 4})
    for (const auto& oh : rows)
      for (size_t order = 0; order < std::max<size_t>(1, orders.size()); ++order, ++n) {
        nlohmann::json values = task.space.fallback().to_json();
        values["tile_oc"] = chunks;
        values["tile_oh"] = oh;
        if (!orders.empty()) values["reorder_inner"] = orders[order];
        values["parallel_fuse"] = fuses[n % fuses.size()];
        if (!pads.empty()) values["pad"] = pads[n % pads.size()];
        const ConfigEntity config = task.space.from_json(values);
        expect_config_matches(task, config);
      }
}

// 64 output channels: 4 chunks of 16 on AVX-512 (8 of 8 on AVX2).
// Grouped convolutions take the same templates, their blocks dividing one
// group's channels: 24 per group (RegNet's width) gives blocks of 8; four
// groups of 4 (ResNeXt's first stage, scaled down) blocks of 4.
TEST(AutotvmTemplate, GroupConv2dSampledConfigsMatchReference) {
  ops::OpArgs regnet = args({1, 48, 9, 9}, {48, 24, 3, 3}, 2, 1, true);
  regnet.groups = 2;
  expect_sampled_configs_match("group_conv2d", regnet, "conv2d_NCHWc.x86", 11);
  ops::OpArgs resnext = args({1, 16, 10, 10}, {16, 4, 3, 3}, 1, 1);
  resnext.groups = 4;
  expect_sampled_configs_match("group_conv2d", resnext, "conv2d_NCHWc.x86", 12);
  ops::OpArgs pointwise = args({1, 32, 7, 7}, {64, 8, 1, 1}, 1, 0, true);
  pointwise.groups = 4;
  expect_sampled_configs_match("group_conv2d", pointwise, "conv2d_NCHWc_1x1.x86", 13);
  const Task task = create_task("group_conv2d", regnet, host_with_width(512));
  EXPECT_EQ(task.args.ic_bn, 8);
  EXPECT_EQ(task.args.oc_bn, 8);
  EXPECT_NE(task.describe().find("groups=2"), std::string::npos) << task.describe();
}

TEST(AutotvmTemplate, Conv2dNchwcTileOcConfigsMatchReference) {
  for (int bits : kWidths) {
  SCOPED_TRACE("vector width " + std::to_string(bits));
  const target::Target host = host_with_width(bits);
  for (bool epilogue : {false, true}) {
    Task task = create_task("conv2d", args({1, 16, 6, 6}, {64, 16, 3, 3}, 1, 1, epilogue), host);
    EXPECT_EQ(task.name(), "conv2d_NCHWc.x86");
    expect_tile_oc_configs_match(task, {1, 2});
  }
  for (bool epilogue : {false, true}) {
    // Unpadded: one flattened row of 30 positions. Padded: 8 rows of 7.
    Task task = create_task("conv2d", args({1, 32, 6, 5}, {64, 32, 1, 1}, 1, 0, epilogue), host);
    EXPECT_EQ(task.name(), "conv2d_NCHWc_1x1.x86");
    expect_tile_oc_configs_match(task, {{1, 1}});
    Task padded = create_task("conv2d", args({1, 32, 6, 5}, {64, 32, 1, 1}, 1, 1, epilogue), host);
    EXPECT_EQ(padded.name(), "conv2d_NCHWc_1x1.x86");
    expect_tile_oc_configs_match(padded, {{8, 1}, {4, 2}});
  }
  }
}

// 72 output channels on AVX2: 9 chunks of 8, which neither 4 nor 2 divides.
// Tiles of 3 chunks are candidates of both templates and their fallback (the
// hand-written schedule's tile), and every width of them matches the
// reference.
TEST(AutotvmTemplate, ThreeChunkTilesAreCandidatesAndTheAvx2Fallback) {
  const target::Target host = host_with_width(256);
  for (const auto& [a, name] : {std::pair{args({1, 16, 7, 7}, {72, 16, 3, 3}, 1, 1, true), "conv2d_NCHWc.x86"},
                                std::pair{args({1, 16, 7, 7}, {72, 16, 1, 1}, 1, 0, true), "conv2d_NCHWc_1x1.x86"}}) {
    Task task = create_task("conv2d", a, host);
    ASSERT_EQ(task.name(), name);
    auto knobs = knob_candidates(task);
    EXPECT_EQ(knobs["tile_oc"], (std::vector<nlohmann::json>{1, 3}));
    EXPECT_EQ(task.space.fallback().value("tile_oc"), 3);
    for (const auto& width : knobs["tile_ow"]) {
      nlohmann::json values = task.space.fallback().to_json();
      values["tile_ow"] = width;
      const ConfigEntity config = task.space.from_json(values);
      expect_config_matches(task, config);
    }
  }
}

// Grouped, tiles stay within a group: 16 groups of one chunk each (ResNeXt's
// groups of 4 merged into blocks of 8) offer tiles of one chunk, 4 groups of
// 4 chunks all up to 4; both fallbacks are the hand-written tile, and they
// and a wide tile match the reference.
TEST(AutotvmTemplate, GroupedTilesStayWithinAGroup) {
  const target::Target host = host_with_width(256);
  for (const auto& [groups, tiles, fallback] : {std::tuple{int64_t{16}, std::vector<nlohmann::json>{1}, 1},
                                                std::tuple{int64_t{4}, std::vector<nlohmann::json>{1, 2, 4}, 4}}) {
    SCOPED_TRACE(std::to_string(groups) + " groups");
    ops::OpArgs a = args({1, 128, 8, 9}, {128, 128 / groups, 3, 3}, 1, 1, true);
    a.groups = groups;
    a.layout = "NCHWc";
    a.ic_bn = a.oc_bn = 8;
    Task task = create_task("group_conv2d", a, host);
    ASSERT_EQ(task.name(), "conv2d_NCHWc.x86");
    auto knobs = knob_candidates(task);
    EXPECT_EQ(knobs["tile_oc"], tiles);
    EXPECT_EQ(task.space.fallback().value("tile_oc"), fallback);
    expect_config_matches(task, task.space.fallback());
    nlohmann::json values = task.space.fallback().to_json();
    values["tile_ow"] = knobs["tile_ow"].back();
    expect_config_matches(task, task.space.from_json(values));
  }
}

// acc_rows > 0: the tile stage buffers chunks x rows x the whole width and
// the input-channel blocks loop outside its register tiles. Every row count
// on offer, with each chunk count and register rows, tile widths that do and
// do not divide the row, the other knobs cycled, matches the reference.
// (32 or 64 output channels: up to 4 chunks on AVX2, 2 or 4 on AVX-512.)
TEST(AutotvmTemplate, Conv2dNchwcBufferedRowsConfigsMatchReference) {
  for (int bits : kWidths) {
  SCOPED_TRACE("vector width " + std::to_string(bits));
  const target::Target host = host_with_width(bits);
  for (const auto& a : {args({1, 16, 6, 6}, {64, 16, 3, 3}, 1, 1), args({1, 16, 6, 7}, {64, 16, 3, 3}, 1, 1, true),
                        args({1, 8, 13, 11}, {32, 8, 3, 3}, 2, 1, true)}) {
    Task task = create_task("conv2d", a, host);
    ASSERT_EQ(task.name(), "conv2d_NCHWc.x86");
    auto knobs = knob_candidates(task);
    ASSERT_GE(knobs["acc_rows"].size(), 3u) << task.describe();  // 0 and at least two row counts
    EXPECT_EQ(knobs["acc_rows"].front(), 0);
    size_t n = 0;
    for (size_t r = 1; r < knobs["acc_rows"].size(); ++r)
      for (const auto& chunks : knobs["tile_oc"])
        for (const auto& oh : knobs["tile_oh"]) {
          ++n;
          nlohmann::json values = task.space.fallback().to_json();
          values["acc_rows"] = knobs["acc_rows"][r];
          values["tile_oc"] = chunks;
          values["tile_oh"] = oh;
          values["tile_ow"] = knobs["tile_ow"][n % knobs["tile_ow"].size()];
          values["unroll_kw"] = n % 2 == 1;
          values["reorder_reduce"] = knobs["reorder_reduce"][n % knobs["reorder_reduce"].size()];
          values["parallel_fuse"] = knobs["parallel_fuse"][n % knobs["parallel_fuse"].size()];
          values["pad"] = knobs["pad"][n % knobs["pad"].size()];
          const ConfigEntity config = task.space.from_json(values);
          expect_config_matches(task, config);
        }
  }
  }
}

// The 1x1 template's buffer knob: every [columns, blocks per pass] on offer
// (columns that do and do not divide the flattened positions, one, some and
// all input-channel blocks per pass), with each chunk count and tile widths
// cycled, matches the reference; a padded 1x1 (5-D) offers no buffer.
TEST(AutotvmTemplate, Conv2dNchwc1x1BufferConfigsMatchReference) {
  for (int bits : kWidths) {
  SCOPED_TRACE("vector width " + std::to_string(bits));
  const target::Target host = host_with_width(bits);
  for (const auto& a : {args({1, 128, 9, 10}, {64, 128, 1, 1}), args({1, 128, 13, 13}, {32, 128, 1, 1}, 2, 0, true)}) {
    Task task = create_task("conv2d", a, host);
    ASSERT_EQ(task.name(), "conv2d_NCHWc_1x1.x86");
    auto knobs = knob_candidates(task);
    ASSERT_GE(knobs["buffer"].size(), 3u) << task.describe();
    EXPECT_EQ(knobs["buffer"].front(), nlohmann::json::array({0, 0}));
    size_t n = 0;
    for (const auto& buffer : knobs["buffer"])
      for (const auto& chunks : knobs["tile_oc"]) {
        ++n;
        nlohmann::json values = task.space.fallback().to_json();
        values["buffer"] = buffer;
        values["tile_oc"] = chunks;
        values["tile_ow"] = knobs["tile_ow"][(3 * n) % knobs["tile_ow"].size()];
        values["parallel_fuse"] = knobs["parallel_fuse"][n % knobs["parallel_fuse"].size()];
        const ConfigEntity config = task.space.from_json(values);
        expect_config_matches(task, config);
      }
  }
  Task padded = create_task("conv2d", args({1, 32, 6, 5}, {64, 32, 1, 1}, 1, 1), host);
  for (const auto& k : padded.space.knobs())
    if (k.name == "buffer") EXPECT_EQ(k.candidates.size(), 1u);
  }
}

TEST(AutotvmTemplate, DepthwiseConv2dNchwcSampledConfigsMatchReference) {
  const std::string name = "depthwise_conv2d_NCHWc.x86";
  expect_sampled_configs_match("depthwise_conv2d", args({1, 32, 12, 12}, {32, 1, 3, 3}, 1, 1), name, 5);
  expect_sampled_configs_match("depthwise_conv2d", args({1, 24, 11, 9}, {24, 1, 3, 3}, 2, 1, true), name, 6);
}

ops::OpArgs winograd_args(ops::Shape input, ops::Shape weight, int64_t pad, int64_t tile, bool epilogue = false) {
  ops::OpArgs a = args(std::move(input), std::move(weight), 1, pad, epilogue);
  a.winograd_tile = tile;
  return a;
}

// Every register tile of the product, on tiles that divide the output and
// tiles that leave a ragged edge, for both output tiles.
TEST(AutotvmTemplate, Conv2dWinogradConfigsMatchReference) {
  for (int bits : kWidths) {
  SCOPED_TRACE("vector width " + std::to_string(bits));
  const target::Target host = host_with_width(bits);
  for (const auto& a : {winograd_args({1, 16, 8, 8}, {32, 16, 3, 3}, 1, 4),
                        winograd_args({2, 8, 7, 5}, {16, 8, 3, 3}, 1, 2, true),
                        winograd_args({1, 16, 9, 6}, {16, 16, 3, 3}, 0, 4, true)}) {
    Task task = create_task("conv2d_winograd", a, host);
    ASSERT_EQ(task.name(), "conv2d_NCHWc_winograd.x86");
    std::vector<ConfigEntity> configs = {task.space.fallback()};
    for (int64_t i = 0; i < task.space.size(); i += 3) configs.push_back(task.space.get(i));
    for (const auto& config : configs) {
      expect_config_matches(task, config);
    }
  }
  }
}

TEST(AutotvmTemplate, DensePackSampledConfigsMatchReference) {
  expect_sampled_configs_match("dense", args({4, 64}, {48, 64}), "dense_pack.x86", 7);
  expect_sampled_configs_match("dense", args({3, 37}, {80, 37}, 1, 0, true), "dense_pack.x86", 8);
  // Blocks of 64 (tile_lanes 64, 32, 16 and on AVX2 8).
  expect_sampled_configs_match("dense", args({7, 40}, {128, 40}), "dense_pack.x86", 11);
}

// tile_lanes came after records of dense_pack.x86 were shipped: a config
// without it tiles whole blocks, as those records were measured, and the
// knob's first candidate is the whole block.
TEST(AutotvmTemplate, DensePackConfigsFromBeforeTileLanesTileWholeBlocks) {
  for (int bits : kWidths) {
    Task task = create_task("dense", args({7, 40}, {128, 40}), host_with_width(bits));
    EXPECT_EQ(task.space.knob("tile_lanes").candidates.front(), 64);
    nlohmann::json old = task.space.get(5).to_json();
    old.erase("tile_lanes");
    nlohmann::json whole = old;
    whole["tile_lanes"] = 64;
    EXPECT_EQ(task.instantiate(task.space.from_json(old)).dump(), task.instantiate(task.space.from_json(whole)).dump());
    whole["tile_lanes"] = 16;
    EXPECT_NE(task.instantiate(task.space.from_json(old)).dump(), task.instantiate(task.space.from_json(whole)).dump());
  }
}

TEST(AutotvmTemplate, BatchMatmulSampledConfigsMatchReference) {
  expect_sampled_configs_match("batch_matmul", args({2, 8, 16}, {2, 24, 16}), "batch_matmul.x86", 9);
  expect_sampled_configs_match("batch_matmul", args({3, 5, 7}, {3, 9, 7}), "batch_matmul.x86", 10);
}

ops::OpArgs resnet_conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t size) {
  return args({1, in, size, size}, {out, in, kernel, kernel}, stride, kernel / 2);
}

TEST(AutotvmTemplate, FallbacksAreTheHandWrittenSchedules) {
  for (int bits : kWidths) {
  const target::Target host = host_with_width(bits);
  for (const auto& a : {resnet_conv(64, 64, 3, 1, 56), resnet_conv(64, 128, 1, 2, 56), resnet_conv(3, 64, 7, 2, 224),
                        resnet_conv(512, 512, 3, 1, 7), resnet_conv(1024, 256, 1, 1, 14),
                        args({1, 16, 10, 10}, {32, 16, 3, 3}, 1, 1, true)}) {
    Task task = create_task("conv2d", a, host);
    EXPECT_EQ(task.instantiate(task.space.fallback()).dump(),
              schedule::conv2d_nchwc_schedule(task.workload.dag, host.vector_unit()).dump())
        << task.describe();
  }
  for (const auto& a : {args({1, 96, 112, 112}, {96, 1, 3, 3}, 2, 1), args({1, 32, 14, 14}, {32, 1, 3, 3}, 1, 1)}) {
    Task task = create_task("depthwise_conv2d", a, host);
    EXPECT_EQ(task.instantiate(task.space.fallback()).dump(),
              schedule::depthwise_nchwc_schedule(task.workload.dag).dump())
        << task.describe();
  }
  for (const auto& a : {winograd_args({1, 64, 56, 56}, {64, 64, 3, 3}, 1, 4), winograd_args({1, 512, 7, 7}, {512, 512, 3, 3}, 1, 2)}) {
    Task task = create_task("conv2d_winograd", a, host);
    EXPECT_EQ(task.instantiate(task.space.fallback()).dump(),
              schedule::best_manual_schedule(task.workload.dag, host.vector_unit()).dump())
        << task.describe();
  }
  for (const auto& a : {args({1, 512}, {1000, 512}), args({8, 64}, {48, 64}, 1, 0, true), args({7, 40}, {128, 40})}) {
    Task task = create_task("dense", a, host);
    EXPECT_EQ(task.instantiate(task.space.fallback()).dump(),
              schedule::dense_pack_schedule(task.workload.dag, host.vector_unit()).dump())
        << task.describe();
  }
  }
}

TEST(AutotvmTemplate, ConvIsDeclaredInNchwcWithVectorWideBlocks) {
  const target::Target avx512 = host_with_width(512), avx2 = host_with_width(256);
  ops::OpArgs a = resnet_conv(64, 128, 3, 1, 14);
  Task wide = create_task("conv2d", a, avx512), narrow = create_task("conv2d", a, avx2);
  EXPECT_EQ(wide.args.layout, "NCHWc");
  EXPECT_EQ(wide.args.ic_bn, 16);
  EXPECT_EQ(narrow.args.oc_bn, 8);
  a.ic_bn = 4;  // given blocks are kept
  EXPECT_EQ(create_task("conv2d", a, avx512).args.ic_bn, 4);
  EXPECT_EQ(create_task("conv2d", resnet_conv(3, 64, 7, 2, 32), avx512).args.ic_bn, 1);
  EXPECT_EQ(create_task("dense", args({1, 512}, {1000, 512}), avx512).args.layout, "packed");
}

TEST(AutotvmTemplate, RegistryListsTemplatesAndNamesWhatIsMissing) {
  std::vector<std::string> names;
  for (const auto& t : templates()) names.push_back(t.name);
  // seven x86 templates (the int8 convolution's too); dense, batch_matmul,
  // conv2d direct, Winograd and as one product (NCHW and NHWC), depthwise
  // on GPUs; the four products on CUDA's tensor cores
  EXPECT_EQ(names.size(), 18u);
  for (const char* gpu : {"dense.gpu", "batch_matmul.gpu", "conv2d_nchw.gpu", "conv2d_nchw_winograd.gpu",
                          "conv2d_nchw_implicit_gemm.gpu", "conv2d_nhwc_implicit_gemm.gpu", "depthwise_conv2d_nchw.gpu",
                          "qlinear_conv2d_NCHWc.x86", "dense_tensorcore.cuda", "batch_matmul_tensorcore.cuda",
                          "conv2d_nchw_implicit_gemm_tensorcore.cuda", "conv2d_nhwc_implicit_gemm_tensorcore.cuda"})
    EXPECT_NE(std::find(names.begin(), names.end(), gpu), names.end()) << gpu;
  const target::Target host = target::Target::host();
  try {
    find_templates("softmax", args({4, 8}, {}), host);
    FAIL() << "no template for softmax";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("softmax"), std::string::npos) << m;
    EXPECT_NE(m.find("llvm"), std::string::npos) << m;
    EXPECT_NE(m.find("layout NCHW"), std::string::npos) << m;
    EXPECT_NE(m.find("conv2d_NCHWc.x86"), std::string::npos) << m;
  }
  target::Target cuda = host;
  cuda.kind = "cuda";
  EXPECT_EQ(find_templates("conv2d", resnet_conv(64, 64, 3, 1, 56), cuda).front()->name, "conv2d_nchw.gpu");
  ops::OpArgs grouped = resnet_conv(64, 64, 3, 1, 56);
  grouped.groups = 2;
  grouped.weight[1] = 32;
  EXPECT_THROW(find_templates("group_conv2d", grouped, cuda), Error);  // no GPU template for grouped ones yet
  EXPECT_THROW(create_task("depthwise_conv2d", args({1, 8, 9, 9}, {8, 2, 3, 3}), host),
               Error);  // multiplier 2
  EXPECT_THROW(create_task("conv2d", args({1, 8, 9, 9}, {8, 4, 3, 3}), host),
               Error);  // channels disagree
}

TEST(AutotvmTemplate, ArgsJsonRoundTrip) {
  ops::OpArgs a = args({1, 64, 56, 56}, {64, 64, 3, 3}, 2, 1, true);
  a.padding = {1, 2, 1, 2};
  a.layout = "NCHWc";
  a.ic_bn = 16;
  a.oc_bn = 8;
  a.pool = 3;
  a.count_include_pad = true;
  a.clip_min = -1.5f;
  a.clip_max = 2.5f;
  a.axis = 3;
  a.dilation = 2;
  // Every field round-trips through the ops that take it.
  for (const std::string op : {"conv2d", "avg_pool", "clip", "bias_add"}) {
    SCOPED_TRACE(op);
    ops::OpArgs b = args_from_json(op, nlohmann::json::parse(args_to_json(op, a).dump()));
    EXPECT_EQ(args_to_json(op, b), args_to_json(op, a));
  }
  EXPECT_EQ(args_from_json("conv2d", args_to_json("conv2d", a)).padding, a.padding);
  EXPECT_EQ(args_from_json("clip", args_to_json("clip", a)).clip_max, 2.5f);
  EXPECT_EQ(args_from_json("bias_add", args_to_json("bias_add", a)).axis, 3u);
  EXPECT_EQ(args_from_json("conv2d", nlohmann::json::object()).layout,
            "NCHW");  // absent fields: defaults
  EXPECT_THROW(args_from_json("conv2d", nlohmann::json::array()), Error);
  EXPECT_THROW(args_from_json("conv2d", {{"input", "1x64"}}), Error);
  EXPECT_THROW(args_from_json("conv2d", {{"stride", true}}), Error);
  EXPECT_THROW(args_from_json("conv2d", {{"strides", 1}}), Error);
  EXPECT_THROW(args_from_json("nosuchop", nlohmann::json::object()), Error);
}

// What a record stores is what its operator takes: a conv2d record carries no
// pool or clip bounds; an old record's extra fields are read while they hold
// the defaults, and refused when they would mean something else.
TEST(AutotvmTemplate, RecordedArgsAreTheOperatorsOwn) {
  const nlohmann::json conv = args_to_json("conv2d", args({1, 8, 9, 9}, {16, 8, 3, 3}, 1, 1));
  for (const char* foreign : {"pool", "clip_max", "clip_min", "count_include_pad", "axis"})
    EXPECT_FALSE(conv.contains(foreign)) << foreign;
  EXPECT_TRUE(conv.contains("pad"));
  nlohmann::json old = conv;
  old["pool"] = 2;  // the default: what logs before typed args hold
  old["clip_max"] = 6.0;
  EXPECT_EQ(args_from_json("conv2d", old).input, (ops::Shape{1, 8, 9, 9}));
  old["pool"] = 3;
  EXPECT_THROW(args_from_json("conv2d", old), Error);
  EXPECT_EQ(args_to_json("dense", args({4, 64}, {48, 64})).size(), 6u);
}

// Declaring a task needs no CPU of the target's kind: both widths everywhere.
TEST(AutotvmTemplate, TaskDescribesItselfAndMakesMeasureInputs) {
  for (const auto& [target, data] :
       {std::pair{"llvm -mcpu=skylake-avx512", "data=[1, 4, 56, 56, 16]"},
        std::pair{"llvm -mcpu=haswell", "data=[1, 8, 56, 56, 8]"}}) {
    Task task = create_task("conv2d", resnet_conv(64, 64, 3, 1, 56), target::Target::parse(target));
    EXPECT_NE(task.describe().find(std::string("conv2d_NCHWc.x86 ") + data), std::string::npos) << task.describe();
    EXPECT_GT(task.flop(), 0);
    EXPECT_FALSE(task.workload_key().empty());
    measure::MeasureInput in = task.measure_input(task.space.get(task.space.size() - 1));
    EXPECT_FALSE(in.trace.steps().empty());
    EXPECT_EQ(in.target.kind, "llvm");
    EXPECT_EQ(in.target.str(), target::Target::parse(target).str());
  }
}

TEST(AutotvmTemplate, ResNet18ConvSpacesAreNotTrivial) {
  const target::Target host = target::Target::host();
  for (const auto& a :
       {resnet_conv(3, 64, 7, 2, 224), resnet_conv(64, 64, 3, 1, 56), resnet_conv(64, 128, 3, 2, 56),
        resnet_conv(64, 128, 1, 2, 56), resnet_conv(128, 128, 3, 1, 28), resnet_conv(128, 256, 3, 2, 28),
        resnet_conv(128, 256, 1, 2, 28), resnet_conv(256, 256, 3, 1, 14), resnet_conv(256, 512, 3, 2, 14),
        resnet_conv(256, 512, 1, 2, 14), resnet_conv(512, 512, 3, 1, 7)}) {
    Task task = create_task("conv2d", a, host);
    std::cout << "[ space    ] " << task.describe() << ": " << task.space.size() << " configs\n";
    EXPECT_GE(task.space.size(), 10);
  }
}

}  // namespace
}  // namespace tessera::autotvm
