// The rows of shared tensor-core tiles padded (tir/pad_tensor_core_rows.h):
// the untuned tensor-core kernels of a ResNet-18 layer and a BERT-base
// product, their warps' shared accesses counted against a model of the
// banks written here (8 rows of 16 bytes a pass for ldmatrix; 32 banks of 4
// bytes for element reads and stores), before and after; the padded kernels
// equal the reference on PoCL.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "../codegen/gpu_run_util.h"
#include "autoschedule/tensor_core_fallback.h"
#include "codegen/gpu_source.h"
#include "codegen/tensor_core_tile.h"
#include "ir/half_storage.h"
#include "ops/workloads.h"
#include "runtime/opencl_device.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/pad_tensor_core_rows.h"
#include "tir/stmt_functor.h"

namespace tessera::tir {
namespace {

TEST(PadTensorCoreRows, RowsOfAnEvenNumberOfSixteenByteSlotsGetOneMore) {
  EXPECT_EQ(conflict_free_row(32, 2), 40);  // 64 bytes -> 80
  EXPECT_EQ(conflict_free_row(64, 2), 72);  // 128 -> 144
  EXPECT_EQ(conflict_free_row(16, 2), 24);
  EXPECT_EQ(conflict_free_row(64, 4), 68);  // fp32 C tiles and TF32 operands: 256 -> 272
  EXPECT_EQ(conflict_free_row(8, 2), 8);    // one slot: conflict-free already
  EXPECT_EQ(conflict_free_row(24, 2), 24);  // three
  EXPECT_EQ(conflict_free_row(12, 2), 12);  // 24 bytes: not a whole number of slots
  EXPECT_EQ(conflict_free_row(6, 4), 6);
}

// The untuned tensor-core kernel (autoschedule/tensor_core_fallback.h) of
// `dag` on sm_90 (`tf32`: with TF32), lowered.
LoweredFunc fallback(const ir::ComputeDAG& dag, bool tf32 = false) {
  const target::Target t = target::Target::parse(std::string("cuda -arch=sm_90") + (tf32 ? " -tf32" : ""));
  const auto f = autoschedule::tensor_core_fallback(dag, t);
  if (!f) throw Error("no tensor-core fallback");
  return lower(dag, autoschedule::instantiate(f->sketch, f->params), "k");
}

struct Passes {
  int ldmatrix = 0;  // the most passes of one 8 x 8 matrix of an ldmatrix
  int elements = 0;  // the most lanes of a warp on one bank, element reads and stores
  int shared_accesses = 0;
};

// Shared memory passes a warp takes, by the model: of an ldmatrix, the most
// of its 8 rows (16 bytes each, `stride` elements apart) in one 16-byte slot
// of 128 bytes; of an element access whose lanes (g, t) = (lane / 4, lane %
// 4) reach `g * gs + t * ts` elements, the most distinct words on one bank.
int ldmatrix_passes(int64_t stride, int64_t element_bytes) {
  std::map<int64_t, int> slots;
  int most = 0;
  for (int64_t r = 0; r < 8; ++r) most = std::max(most, ++slots[(r * stride * element_bytes) % 128 / 16]);
  return most;
}
int element_passes(int64_t gs, int64_t ts, int64_t element_bytes) {
  std::map<int64_t, std::set<int64_t>> banks;
  for (int64_t g = 0; g < 8; ++g)
    for (int64_t t = 0; t < 4; ++t) {
      const int64_t word = (g * gs + t * ts) * element_bytes / 4;
      banks[word % 32].insert(word);
    }
  size_t most = 0;
  for (const auto& [bank, words] : banks) most = std::max(most, words.size());
  return static_cast<int>(most);
}

// Each tensor-core tile's shared operands and destination, by the access
// pattern codegen/tensor_core_tile.h gives them: a half operand with one
// contiguous axis through ldmatrix; an fp32 operand's lanes at rows g and
// steps t (A) or steps t and columns g (B); a store's at rows g and
// columns 2t.
Passes count_passes(const DeviceProgram& p) {
  Passes out;
  for (const DeviceKernel& k : p.kernels) {
    std::set<const ir::TensorNode*> shared;
    visit_stmts(k.body, [&](const Stmt& s) {
      if (const auto* a = as<AllocateNode>(s); a && a->scope == MemoryScope::Shared) shared.insert(a->buffer.get());
    });
    visit_stmts(k.body, [&](const Stmt& s) {
      const auto* f = as<ForNode>(s);
      if (!f || f->for_kind != ForKind::TensorCore) return;
      const codegen::TensorCoreTile tile = codegen::recognise_tensor_core_tile(*f);
      auto operand = [&](const codegen::TileOperand& o, bool a) {
        if (!shared.count(o.buffer.get())) return;
        ++out.shared_accesses;
        const int64_t bytes = ir::size_in_bytes(o.buffer->dtype);
        const int64_t steps = a ? o.col_stride : o.row_stride, across = a ? o.row_stride : o.col_stride;
        if (bytes == 2 && (steps == 1 || across == 1))
          out.ldmatrix = std::max(out.ldmatrix, ldmatrix_passes(steps == 1 ? across : steps, bytes));
        else
          out.elements = std::max(out.elements, a ? element_passes(o.row_stride, o.col_stride, bytes)
                                                  : element_passes(o.col_stride, o.row_stride, bytes));
      };
      if (tile.op == codegen::TensorCoreTile::Op::MultiplyAdd) {
        operand(tile.a, true);
        operand(tile.b, false);
      } else if (tile.op == codegen::TensorCoreTile::Op::Store && shared.count(tile.destination.buffer.get())) {
        ++out.shared_accesses;
        const codegen::TileOperand& d = tile.destination;
        out.elements =
            std::max(out.elements, element_passes(d.row_stride, 2 * d.col_stride, ir::size_in_bytes(d.buffer->dtype)));
      }
    });
  }
  return out;
}

DeviceProgram unpadded(const LoweredFunc& f) { return split_device_kernels(prepare_for_gpu_codegen(f)); }
DeviceProgram padded(const LoweredFunc& f, int64_t max_shared_bytes = 48 * 1024) {
  DeviceProgram p = unpadded(f);
  for (DeviceKernel& k : p.kernels) pad_tensor_core_rows(k, max_shared_bytes);
  return p;
}

const ops::Epilogue kBiasRelu{.bias = true, .relu = true};

// ResNet-18's layer1 3x3 convolution at batch 16 in half: the weights' tile
// rows of 32 halves (each ldmatrix matrix in 4 passes), the columns' of 64
// (8 passes), the C tile's of 64 floats (8 lanes a bank).
TEST(PadTensorCoreRows, AResnetLayerInHalfReadsEachLdmatrixMatrixInOnePass) {
  const ops::Workload conv = ops::conv2d_nchw_implicit_gemm_workload({16, 64, 56, 56}, {64, 64, 3, 3},
                                                                     ops::Conv2dAttrs::symmetric(1, 1), kBiasRelu);
  const LoweredFunc f = fallback(ir::with_half_storage(conv.dag));
  const Passes before = count_passes(unpadded(f)), after = count_passes(padded(f));
  EXPECT_GT(before.shared_accesses, 0);
  EXPECT_EQ(before.shared_accesses, after.shared_accesses);
  EXPECT_EQ(before.ldmatrix, 8);
  EXPECT_EQ(after.ldmatrix, 1);
  EXPECT_EQ(before.elements, 8);
  EXPECT_EQ(after.elements, 2);
  // emit_gpu_source pads: 64 x (32 + 8) weights, 32 x (64 + 8) columns, 64 x (64 + 4) C.
  const std::string cuda = codegen::emit_gpu_source(f, target::GpuLimits{.arch = 90}, codegen::GpuDialect::Cuda).code;
  EXPECT_NE(cuda.find("unsigned short conv_weights_cache[2560];"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("unsigned short conv_columns_cache[2304];"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("float conv_product_local[4352];"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("tsr_ldmatrix_a<false>(conv_weights_cache + "), std::string::npos) << cuda;
  EXPECT_NE(cuda.find(", 40)"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find(", 72)"), std::string::npos) << cuda;
}

// BERT-base's products at batch 16 (2048 tokens x 768): in half through
// ldmatrix, in fp32 on a -tf32 target through element reads.
TEST(PadTensorCoreRows, DenseProductsInHalfAndTf32SpreadOverTheBanks) {
  const ops::Workload qkv = ops::dense_workload({2048, 768}, {768, 768}, ops::Epilogue{.bias = true});
  const LoweredFunc half = fallback(ir::with_half_storage(qkv.dag));
  const Passes half_before = count_passes(unpadded(half)), half_after = count_passes(padded(half));
  EXPECT_GE(half_before.ldmatrix, 4);
  EXPECT_EQ(half_after.ldmatrix, 1);
  const LoweredFunc tf32 = fallback(qkv.dag, true);
  const Passes tf32_before = count_passes(unpadded(tf32)), tf32_after = count_passes(padded(tf32));
  EXPECT_GT(tf32_before.shared_accesses, 0);
  EXPECT_GE(tf32_before.elements, 4);
  EXPECT_LE(tf32_after.elements, 2);
}

// A kernel whose padded tiles would not fit the block's shared memory keeps
// them as they are; one without tensor-core loops is never touched.
TEST(PadTensorCoreRows, PaddingStaysWithinTheSharedMemoryLimit) {
  const ops::Workload w = ops::dense_workload({64, 64}, {64, 64});
  const LoweredFunc f = fallback(ir::with_half_storage(w.dag));
  const DeviceProgram plain = unpadded(f);
  const int64_t bytes = plain.kernels.at(0).shared_bytes;
  EXPECT_EQ(padded(f, bytes).kernels.at(0).shared_bytes, bytes);
  EXPECT_EQ(count_passes(padded(f, bytes)).ldmatrix, count_passes(plain).ldmatrix);
  EXPECT_GT(padded(f).kernels.at(0).shared_bytes, bytes);
}

// Padded, the kernels compute what they did: on PoCL (every lane runs its
// warp's tiles as loops, through the padded indices) against the reference.
TEST(PadTensorCoreRows, PaddedKernelsMatchTheReferenceOnOpenCl) {
  if (std::string why = runtime::opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::vector<ops::Workload> workloads = {
      ops::dense_workload({64, 96}, {48, 96}, ops::Epilogue{.bias = true}),
      ops::conv2d_nchw_implicit_gemm_workload({2, 16, 8, 8}, {32, 16, 3, 3}, ops::Conv2dAttrs::symmetric(1, 1),
                                              kBiasRelu),
      ops::conv2d_nhwc_implicit_gemm_workload({2, 8, 8, 16}, {3, 3, 16, 32}, ops::Conv2dAttrs::symmetric(1, 1),
                                              kBiasRelu),
  };
  for (const ops::Workload& w : workloads) {
    const LoweredFunc f = fallback(ir::with_half_storage(w.dag));
    EXPECT_LT(count_passes(padded(f)).ldmatrix, count_passes(unpadded(f)).ldmatrix) << w.op;
    EXPECT_LE(codegen::test::run_half_against_reference(w, f, target::Target::parse("opencl"), 11).max_relative_error,
              2e-3)
        << w.op;
  }
}

}  // namespace
}  // namespace tessera::tir
