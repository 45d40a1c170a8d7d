// Merging narrow groups of a grouped convolution (graph/merged_groups.h).
#include "graph/merged_groups.h"

#include <gtest/gtest.h>

#include "tessera/error.h"

namespace tessera::graph {
namespace {

TEST(MergedGroups, MergesGroupsNarrowerThanABlockThatDivideIt) {
  EXPECT_EQ(groups_to_merge(32, 4, 4, 8), 2);   // ResNeXt-50's first stage at 8 lanes
  EXPECT_EQ(groups_to_merge(32, 4, 4, 16), 4);  // and at 16
  EXPECT_EQ(groups_to_merge(32, 8, 8, 8), 1);   // already a block
  EXPECT_EQ(groups_to_merge(3, 4, 4, 8), 1);    // an odd count of groups would leave one alone
  EXPECT_EQ(groups_to_merge(8, 3, 3, 8), 1);    // 3 does not divide a block
  EXPECT_EQ(groups_to_merge(8, 4, 2, 8), 1);    // inputs and outputs per group differ
  EXPECT_EQ(groups_to_merge(1, 4, 4, 8), 1);    // no groups
}

// OIHW weight (O, I/groups, KH, KW) with entry (o, i, h, w) = a distinct value.
runtime::NDArray numbered(const std::vector<int64_t>& shape) {
  runtime::NDArray a(shape);
  for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i + 1);
  return a;
}

TEST(MergedGroups, EachOutputKeepsItsGroupsWeightsAtItsPlaceAndZerosElsewhere) {
  // 4 groups of 2 outputs and 3 inputs, 1x2 taps, merged 2 at a time.
  const runtime::NDArray w = numbered({8, 3, 1, 2});
  const runtime::NDArray m = merge_groups(w, "OIHW", 4, 2);
  ASSERT_EQ(m.shape(), (std::vector<int64_t>{8, 6, 1, 2}));
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t t = 0; t < 2; ++t) {
        // Output o is of group o / 2; within its merged group at place (o / 2) % 2.
        const int64_t place = (o / 2) % 2;
        const float want = i / 3 == place ? w[(o * 3 + i % 3) * 2 + t] : 0.f;
        EXPECT_EQ(m[(o * 6 + i) * 2 + t], want) << o << " " << i << " " << t;
      }
}

TEST(MergedGroups, HwioMergesAsOihwDoes) {
  const runtime::NDArray oihw = numbered({8, 3, 2, 2});
  runtime::NDArray hwio({2, 2, 3, 8});
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t t = 0; t < 4; ++t) hwio[(t * 3 + i) * 8 + o] = oihw[(o * 3 + i) * 4 + t];
  const runtime::NDArray a = merge_groups(oihw, "OIHW", 4, 4), b = merge_groups(hwio, "HWIO", 4, 4);
  ASSERT_EQ(b.shape(), (std::vector<int64_t>{2, 2, 12, 8}));
  for (int64_t o = 0; o < 8; ++o)
    for (int64_t i = 0; i < 12; ++i)
      for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(b[(t * 12 + i) * 8 + o], a[(o * 12 + i) * 4 + t]);
}

TEST(MergedGroups, RefusesWeightsThatDoNotMergeNamingThem) {
  const runtime::NDArray w = numbered({6, 3, 1, 1});
  try {
    merge_groups(w, "OIHW", 3, 2);
    FAIL() << "3 groups merged 2 at a time";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[6, 3, 1, 1]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(merge_groups(w, "OHWI", 3, 1), Error);
}

}  // namespace
}  // namespace tessera::graph
