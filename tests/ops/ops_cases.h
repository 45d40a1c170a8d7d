#pragma once
// Operator instances shared by the declaration tests (DAG interpreter vs
// reference) and the compiled-kernel tests (default schedule vs reference).
#include <string>
#include <vector>

#include "ops/registry.h"

namespace tessera::ops::test {

// Every registry op on several shapes: odd sizes, stride 2, asymmetric padding.
struct Case {
  std::string op;
  OpArgs args;
};

inline OpArgs conv_args(Shape input, Shape weight, int64_t stride, int64_t pad, std::string layout = "NCHW") {
  OpArgs a;
  a.input = std::move(input);
  a.weight = std::move(weight);
  a.stride = stride;
  a.pad = pad;
  a.layout = std::move(layout);
  return a;
}

inline std::vector<Case> registry_cases() {
  std::vector<Case> cases;
  for (const char* layout : {"NCHW", "NHWC", "NCHWc"}) {
    cases.push_back({"conv2d", conv_args({1, 3, 7, 7}, {4, 3, 3, 3}, 1, 1, layout)});
    cases.push_back({"conv2d", conv_args({2, 4, 13, 11}, {6, 4, 3, 3}, 2, 1, layout)});
    OpArgs fused = conv_args({1, 8, 9, 9}, {16, 8, 1, 1}, 1, 0, layout);
    fused.bias = fused.relu = true;
    cases.push_back({"conv2d", fused});
    OpArgs odd = conv_args({1, 2, 17, 13}, {4, 2, 3, 5}, 2, 0, layout);
    odd.padding = {0, 2, 1, 1};
    odd.dilation = 2;
    cases.push_back({"conv2d", odd});
  }
  OpArgs nchwc_blocks = conv_args({1, 8, 6, 6}, {12, 8, 3, 3}, 1, 1, "NCHWc");
  nchwc_blocks.ic_bn = 2;
  nchwc_blocks.oc_bn = 3;
  nchwc_blocks.bias = true;
  cases.push_back({"conv2d", nchwc_blocks});

  // Grouped: NCHW and blocked (the blocks divide a group's channels), with a
  // window, stride 2 and an epilogue, and unpadded 1x1 (flattened positions).
  for (const char* layout : {"NCHW", "NCHWc"}) {
    OpArgs grouped = conv_args({1, 12, 9, 7}, {18, 4, 3, 3}, 2, 1, layout);
    grouped.groups = 3;
    grouped.bias = grouped.relu = true;
    cases.push_back({"group_conv2d", grouped});
    OpArgs pointwise = conv_args({2, 8, 5, 5}, {8, 2, 1, 1}, 1, 0, layout);
    pointwise.groups = 4;
    cases.push_back({"group_conv2d", pointwise});
  }
  OpArgs group_blocks = conv_args({1, 16, 6, 6}, {16, 8, 3, 3}, 1, 1, "NCHWc");
  group_blocks.groups = 2;
  group_blocks.ic_bn = 4;
  group_blocks.oc_bn = 2;
  cases.push_back({"group_conv2d", group_blocks});

  cases.push_back({"depthwise_conv2d", conv_args({1, 3, 13, 13}, {3, 1, 3, 3}, 1, 1)});
  OpArgs dw = conv_args({2, 4, 9, 7}, {4, 2, 3, 3}, 2, 1);
  dw.bias = dw.relu = true;
  cases.push_back({"depthwise_conv2d", dw});

  OpArgs dense;
  dense.input = {7, 13};
  dense.weight = {17, 13};
  cases.push_back({"dense", dense});
  dense.bias = dense.relu = true;
  cases.push_back({"dense", dense});
  OpArgs packed;
  packed.input = {3, 13};
  packed.weight = {24, 13};
  packed.layout = "packed";
  cases.push_back({"dense", packed});
  packed.oc_bn = 6;
  packed.bias = true;
  cases.push_back({"dense", packed});
  OpArgs bmm;
  bmm.input = {3, 7, 5};
  bmm.weight = {3, 13, 5};
  cases.push_back({"batch_matmul", bmm});

  for (const char* pool : {"max_pool", "avg_pool"})
    for (bool include_pad : {false, true}) {
      OpArgs p;
      p.input = {1, 3, 13, 13};
      p.pool = 3;
      p.stride = 2;
      p.pad = 1;
      p.count_include_pad = include_pad;
      cases.push_back({pool, p});
      p.input = {2, 2, 7, 9};
      p.pool = 2;
      p.pad = 0;
      p.padding = {0, 1, 1, 0};
      cases.push_back({pool, p});
    }
  OpArgs g;
  g.input = {2, 3, 7, 5};
  cases.push_back({"global_avg_pool", g});

  OpArgs s;
  s.input = {3, 17};
  cases.push_back({"softmax", s});
  s.input = {2, 3, 7};
  cases.push_back({"softmax", s});

  OpArgs e;
  e.input = {2, 3, 7};
  cases.push_back({"relu", e});
  cases.push_back({"clip", e});
  cases.push_back({"add", e});
  cases.push_back({"multiply", e});
  cases.push_back({"bias_add", e});
  e.weight = {3, 1};
  cases.push_back({"add", e});
  cases.push_back({"multiply", e});
  return cases;
}

inline std::string describe(const Case& c) {
  return c.op + " input=" + shape_to_string(c.args.input) + " weight=" + shape_to_string(c.args.weight) +
         " layout=" + c.args.layout + " stride=" + std::to_string(c.args.stride) +
         " pad=" + std::to_string(c.args.pad) + (c.args.groups != 1 ? " groups=" + std::to_string(c.args.groups) : "") +
         (c.args.padding.empty() ? "" : " padding=" + shape_to_string(c.args.padding)) +
         (c.args.bias ? " bias" : "") + (c.args.relu ? " relu" : "") +
         (c.args.count_include_pad ? " count_include_pad" : "");
}

}  // namespace tessera::ops::test
