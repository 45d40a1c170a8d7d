#pragma once
// The sketch rules for CPUs, in the order they are tried at each stage
// (sketch_rule.h). Read as a spec:
//  1. AlwaysInline: an elementwise stage that is not an output is inlined.
//  2. AddRfactor: a reduction without reuse (a row sum, a row max) whose
//     innermost reduce axis fills vectors is factored over it: stage
//     "<s>.rf" sums strided slices into a vector of partial results, in
//     parallel over its outer part, and the stage sums that vector (both
//     with and without; the factor is a tile slot).
//  3. MultiLevelTilingWithByteDotProduct: an int8 reduction in the byte
//     dot product's pattern (stage_analysis.h: ByteDotProductAxes) is tiled
//     as rules 6 and 7 tile others, the lanes and the 4 bytes of a lane
//     kept whole and innermost (4 bytes annotated dot_product, lanes
//     vectorized: one vpdpbusd per vector of accumulators), fused into its
//     elementwise consumer at levels 1 and 2 where it has one, else plainly
//     tiled. Its unsigned operand (the padding) is never inlined (rule 1).
//  4. AddCacheRead: a stage that needs multi-level tiling and reads an
//     input with a stride along the axis it vectorizes, reusing each
//     element for at least kMinCacheReadReuse outputs, reads a copy with
//     that dimension last (both with and without; the copy may be made
//     inside the stage's outer tiles, a packed tile).
//  5. AddCacheWrite: a stage that needs multi-level tiling and has no
//     elementwise consumer to fuse into gets a local accumulator stage
//     (both with and without, the later rules derive the rest).
//  6. MultiLevelTilingWithFusion: a stage that needs multi-level tiling and
//     has one elementwise consumer is tiled and computed inside the
//     consumer's tiles (one sketch per fusion level, 1 and 2).
//  7. MultiLevelTiling: a stage that needs multi-level tiling is tiled
//     "SSRSRS": every spatial axis split in 4, every reduce axis in 2,
//     ordered S0 S1 R0 S2 R1 S3 (outer tiles parallel, the innermost
//     spatial tile vectorized and kept in registers).
//  8. SkipStage: anything else keeps its loops; annotation parallelises and
//     vectorizes it, and may move it into its consumer's loops.
#include "autoschedule/sketch_rule.h"

namespace tessera::autoschedule {

class AlwaysInline : public SketchRule {
 public:
  std::string name() const override { return "always-inline"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class AddRfactor : public SketchRule {
 public:
  std::string name() const override { return "add-rfactor"; }
  Condition condition(const SketchContext& ctx, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class MultiLevelTilingWithByteDotProduct : public SketchRule {
 public:
  std::string name() const override { return "multi-level-tiling-with-byte-dot-product"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

// The copy costs a read and a write per element: it pays when the
// element serves several outputs.
inline constexpr int64_t kMinCacheReadReuse = 4;

class AddCacheRead : public SketchRule {
 public:
  std::string name() const override { return "add-cache-read"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class AddCacheWrite : public SketchRule {
 public:
  std::string name() const override { return "add-cache-write"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class MultiLevelTilingWithFusion : public SketchRule {
 public:
  std::string name() const override { return "multi-level-tiling-with-fusion"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class MultiLevelTiling : public SketchRule {
 public:
  std::string name() const override { return "multi-level-tiling"; }
  Condition condition(const SketchContext&, const SketchBuilder& b, int stage) const override;
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override;
};

class SkipStage : public SketchRule {
 public:
  std::string name() const override { return "skip"; }
  Condition condition(const SketchContext&, const SketchBuilder&, int) const override {
    return Condition::ApplyAndSkipRest;
  }
  std::vector<std::pair<SketchBuilder, int>> apply(const SketchContext&, const SketchBuilder& b, int stage) const override {
    return {{b, stage - 1}};
  }
};

SketchRules cpu_sketch_rules();

}  // namespace tessera::autoschedule
