#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include "tessera/error.h"

namespace tessera::runtime {
namespace {

// A chain x -> t1 -> t2 -> ... -> tn -> out of equal tensors, one call each.
ExecutableGraph chain(int intermediates, int64_t elements) {
  ExecutableGraph g;
  g.tensors.push_back({"x", {elements}});
  for (int i = 1; i <= intermediates; ++i) g.tensors.push_back({"t" + std::to_string(i), {elements}});
  g.tensors.push_back({"out", {elements}});
  g.inputs = {0};
  g.outputs = {intermediates + 1};
  for (int i = 0; i <= intermediates; ++i) g.calls.push_back({"k", {i}, {i + 1}});
  return g;
}

// Whether two tensors' byte ranges overlap in the arena.
bool overlap(const MemoryPlan& p, const ExecutableGraph& g, int a, int b) {
  const int64_t ea = p.offset[a] + g.num_elements(a) * 4, eb = p.offset[b] + g.num_elements(b) * 4;
  return p.offset[a] < eb && p.offset[b] < ea;
}

TEST(MemoryPlan, AChainNeedsTwoBuffersWhateverItsLength) {
  ExecutableGraph g = chain(10, 1000);
  MemoryPlan p = plan_memory(g);
  // 4000 bytes rounded up to 64: 4032 per tensor; 10 intermediates in 2 storages.
  EXPECT_EQ(p.unplanned_activation_bytes, 10 * 4032);
  EXPECT_EQ(p.activation_bytes, 2 * 4032);
  EXPECT_EQ(p.arena_bytes, 4 * 4032);  // plus the input and the output
  for (int t = 1; t <= 10; ++t) {
    EXPECT_EQ(p.offset[t] % MemoryPlan::kAlignment, 0);
    EXPECT_FALSE(overlap(p, g, t, t + 1)) << "t" << t << " is read while t" << t + 1 << " is written";
    EXPECT_FALSE(overlap(p, g, t, 0)) << "an intermediate reuses the input";
    EXPECT_FALSE(overlap(p, g, t, 11)) << "an intermediate reuses the output";
  }
}

// Every pair of tensors alive at the same call must not share bytes: checked
// on a residual block, where the skip connection lives across three calls.
TEST(MemoryPlan, TensorsAliveTogetherNeverShareBytes) {
  ExecutableGraph g;
  g.tensors = {{"x", {64}}, {"w", {64}}, {"a", {64}}, {"b", {128}}, {"c", {64}}, {"sum", {64}}, {"out", {64}}};
  g.inputs = {0};
  g.constants = {1};
  g.outputs = {6};
  g.calls = {{"conv", {0, 1}, {2}},  // a
             {"conv", {2, 1}, {3}},  // b (larger)
             {"conv", {3, 1}, {4}},  // c
             {"add", {4, 2}, {5}},   // sum = c + a: a lives from call 0 to 3
             {"relu", {5}, {6}}};
  MemoryPlan p = plan_memory(g);
  EXPECT_EQ(p.offset[1], -1) << "constants are not planned";
  std::vector<int> first(7, -1), last(7, -1);
  for (int c = 0; c < 5; ++c) {
    for (int t : g.calls[c].inputs) last[t] = c;
    for (int t : g.calls[c].outputs) first[t] = last[t] = c;
  }
  for (int a : {2, 3, 4, 5})
    for (int b : {2, 3, 4, 5})
      if (a < b && first[b] <= last[a] && first[a] <= last[b])
        EXPECT_FALSE(overlap(p, g, a, b)) << g.tensors[a].name << " and " << g.tensors[b].name;
  // sum reuses b's storage (free after call 2, large enough): 3 storages, not 4.
  EXPECT_LT(p.activation_bytes, p.unplanned_activation_bytes);
}

// A view (a reshape without a copy) shares its root's bytes and keeps them
// alive until the view's last reader.
TEST(MemoryPlan, AViewLivesInItsRootsStorageAndKeepsItAlive) {
  ExecutableGraph g;
  g.tensors = {{"x", {64}}, {"a", {64}}, {"a_2d", {8, 8}, 1}, {"b", {64}}, {"c", {64}}, {"out", {64}}};
  g.inputs = {0};
  g.outputs = {5};
  g.calls = {{"k", {0}, {1}},     // a
             {"k", {0}, {3}},     // b: a must stay (its view is read below)
             {"k", {3}, {4}},     // c
             {"k", {2, 4}, {5}}};  // out reads the view of a
  g.validate();
  MemoryPlan p = plan_memory(g);
  EXPECT_EQ(p.offset[2], p.offset[1]);
  EXPECT_EQ(p.storage[2], p.storage[1]);
  EXPECT_NE(p.storage[1], p.storage[3]);
  EXPECT_NE(p.storage[1], p.storage[4]) << "a is still read (through its view) when c is written";
}

TEST(MemoryPlan, ViewsThatCouldAliasWrongAreRefused) {
  ExecutableGraph g;
  g.tensors = {{"x", {64}}, {"y", {64}}, {"bad", {63}, 1}};
  g.inputs = {0};
  g.outputs = {1};
  g.calls = {{"k", {0}, {1}}};
  EXPECT_THROW(g.validate(), Error) << "a view of another size";
  g.tensors[2] = {"written", {64}, 1};
  g.calls.push_back({"k", {0}, {2}});
  EXPECT_THROW(g.validate(), Error) << "a call writing a view";
  g.calls.pop_back();
  g.tensors[2] = {"forward", {64}, 2};
  EXPECT_THROW(g.validate(), Error) << "a view of itself or a later tensor";
}

// Half storage (--dtype float16): a half tensor takes 2 bytes an element,
// inputs and outputs stay float32, and a view keeps its root's precision.
TEST(MemoryPlan, HalfTensorsTakeTwoBytesAnElement) {
  ExecutableGraph g;
  g.tensors = {{"x", {1000}}, {"a", {1000}}, {"b", {1000}}, {"y", {1000}}};
  g.tensors[1].half = g.tensors[2].half = true;
  g.inputs = {0};
  g.outputs = {3};
  g.calls = {{"k", {0}, {1}}, {"k", {1}, {2}}, {"k", {2}, {3}}};
  g.validate();
  const MemoryPlan p = plan_memory(g);
  EXPECT_EQ(p.storage_bytes[p.storage[1]], MemoryPlan::aligned(2000));
  EXPECT_EQ(p.storage_bytes[p.storage[0]], MemoryPlan::aligned(4000));

  g.tensors[0].half = true;
  EXPECT_THROW(g.validate(), Error) << "a half input";
  g.tensors[0].half = false;
  g.tensors[3].half = true;
  EXPECT_THROW(g.validate(), Error) << "a half output";
  g.tensors[3].half = false;
  g.tensors.push_back({"view", {10, 100}, 1});  // of a half tensor, itself float32
  EXPECT_THROW(g.validate(), Error) << "a view in another precision than its root";
  g.tensors.back().half = true;
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(ExecutableGraph::from_json(g.to_json(), "test").tensors[1].half, true) << "half survives the artifact";
}

}  // namespace
}  // namespace tessera::runtime
