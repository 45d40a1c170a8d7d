#pragma once
// Graph passes: each a function from Graph to Graph, and one pipeline that
// runs them in order, printing the graph after each when TESSERA_LOG=graph.
#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace tessera::graph {

// A quantized model's float operators between quantize / dequantize pairs
// (onnxruntime's QDQ format) become int8 kernels: a convolution with its
// bias and ReLU (qlinear_conv2d, onnxruntime's own scales and integers), a
// residual add (qlinear_add), a max pooling of stored bytes; a dequantize
// quantized back alike disappears. What has no int8 kernel stays float.
Graph fuse_quantized_operators(const Graph& graph);

// Inference only: dropout is the identity and disappears; batch_norm becomes
// x * scale + shift with constant per-channel scale and shift.
Graph simplify_inference(const Graph& graph);

// x * 0.5 * (1 + erf(x / sqrt 2)), as exporters wrote GELU before ONNX had
// it (torch.onnx at opset 17), becomes one gelu node: one elementwise
// operator, fused into the matrix product before it (the formula reads x
// twice, which fusion cannot join).
Graph recognize_gelu(const Graph& graph);

// mean, subtract, square, mean, add epsilon, sqrt, divide (and a constant
// scale and bias after), as exporters wrote a layer norm over trailing axes
// before ONNX had LayerNormalization, becomes one layer_norm node.
Graph recognize_layer_norm(const Graph& graph);

// An elementwise node reading a reshape (a bias add, GELU or residual add
// after a MatMul of 3-D activations, which the importers compute as reshape
// -> dense -> reshape) moves before it, its other operands reshaped alike
// (a same-shaped tensor, or a row along the last axis), so it fuses into the
// dense as an epilogue.
Graph move_elementwise_before_reshape(const Graph& graph);

// batch_matmul(Q, K) -> [scale] -> [mask add] -> softmax over the keys ->
// batch_matmul(P, V^T), reshapes between allowed, becomes one attention
// node (ops/attention.h), whose kernel never writes the score matrix.
Graph recognize_attention(const Graph& graph);

// An attention whose q, k and v are the heads of (groups, sequence, heads,
// D) tensors transposed to (groups x heads, sequence, D) reads those tensors
// as they are and writes its output so too (AttentionAttrs::sequence_first):
// the transposes into heads and the one back after it are gone.
Graph attention_sequence_first(const Graph& graph);

// A sequence-first self-attention whose q, k and v are each a dense layer
// (with a constant bias, or none) of the same tokens, reshaped into heads,
// reads one dense layer of the three weights stacked instead
// (AttentionAttrs::packed): one product of 3 x heads x D columns, not three.
Graph combine_qkv_projections(const Graph& graph);

// transpose(transpose(x)) is one transpose of x, or x itself.
Graph compose_transposes(const Graph& graph);

// conv2d / dense followed by a multiply and an add with per-output-channel
// constants (what batch_norm became) fold into the weights and a bias_add.
Graph fold_batch_norm(const Graph& graph);

// A node whose inputs are all constants is evaluated now and becomes one.
Graph fold_constants(const Graph& graph);

// Nodes no output depends on are dropped.
Graph eliminate_dead_nodes(const Graph& graph);

// Convolutions (groups 1 or depthwise) run in NCHW<b>c, b = `block` (the
// target's vector lanes; the largest power of two up to it dividing the
// channels): their weights are packed now, layout_transforms wrap them, and
// elementwise operators between convolutions follow them into the blocked
// layout, so that only the transforms at the edges of a run of convolutions
// remain after cancel_layout_transforms.
//
// `conv_blocks` overrides the blocks of named convolutions (the graph tuner's
// choice): {ic_bn, oc_bn}, each dividing its channels (depthwise: equal).
// Where a producer's blocks differ from its reader's, the transforms between
// them become one NCHW<x>c -> NCHW<y>c transform.
struct ConvBlocks {
  int64_t ic_bn = 0, oc_bn = 0;
  bool operator==(const ConvBlocks&) const = default;
};
// The Winograd output tile to give a convolution (0: direct): 4 for 3x3
// stride-1 convolutions of one group with at least 16 input and output
// channels and an output of at least 6x6, where the transforms cost little
// against the 4x fewer multiplications. Measured on Zen 3 (AVX2, 1 thread),
// F(4x4, 3x3) against the direct schedule on ResNet's 3x3 layers alone: 64ch
// 56x56 2.2x, 128ch 28x28 2.5x, 256ch 14x14 1.3x, 512ch 7x7 1.2x faster;
// F(2x2, 3x3) less so on all four.
int64_t winograd_tile_for(const Conv2dAttrs& attrs, const Shape& oihw_weight, const Shape& nchw_output);
// Whether a CPU Winograd kernel reuses its transformed weights over enough
// output tiles (16 of 4x4 over the batch) to pay for reading them: they are
// 4x the direct weights and, in a network, cold. ResNet's 7x7 layers at
// batch 1 have 4 tiles and lose (512 channels, 38 MB: 3.2 ms Winograd
// against 2.4-2.5 ms direct in ResNet-18 at 1 thread on Emerald Rapids);
// batch 4 brings them to 16. GPUs, with their bandwidth, do not ask.
bool winograd_reuses_weights(const Shape& nchw_output);

// `winograd`: convolutions that winograd_tile_for picks
// are marked to run as Winograd.
// Int8 convolutions (qlinear_conv2d of unsigned bytes, constant weights)
// run in the int8 kernels' blocks (ops/qlinear_conv2d.h) when their weights
// lie within +-int8_weight_limit: 64 where the target's byte dot product
// saturates pairs of products (target::Target::byte_dot "pmaddubsw"),
// else 127. Beyond it, weights within +-127 take centered products
// ((x - 128) * w, exact in such pairs; the bias folds the difference) and
// others are split in two halves within it against the input read twice;
// where neither is exact they keep the NCHW kernel. Int8 matrix products
// (qlinear_dense) are marked to store their weight packed for the byte dot
// product, beyond the limit centered or halved alike.
Graph convert_layout(const Graph& graph, int64_t block, const std::map<std::string, ConvBlocks>& conv_blocks = {},
                     bool winograd = false, int int8_weight_limit = 127);

// layout_transform(B -> A) of layout_transform(A -> B) of x is x; a transform
// of a transform is one transform.
Graph cancel_layout_transforms(const Graph& graph);

// Which convolutions choose_implicit_gemm computes as one matrix product:
// none, every ungrouped NCHW one (from true), or those of at least
// `min_positions` output positions (images x rows x columns) over images of
// at least `min_image` positions (rows x columns); every ungrouped NHWC one
// unless none.
struct ImplicitGemmChoice {
  bool on = false;
  int64_t min_positions = 0, min_image = 0;
  ImplicitGemmChoice(bool all = false) : on(all) {}  // NOLINT: a bool says all or none
  static ImplicitGemmChoice where(int64_t min_positions, int64_t min_image) {
    ImplicitGemmChoice c(true);
    c.min_positions = min_positions;
    c.min_image = min_image;
    return c;
  }
};

struct PassOptions {
  int64_t block = 8;                              // convert_layout's channel block; 0 leaves layouts as they are
  std::map<std::string, ConvBlocks> conv_blocks;  // convert_layout's per-convolution choices
  bool fold_batch_norm = true;
  bool winograd = true;  // convert_layout marks the 3x3 convolutions worth running as Winograd
  ImplicitGemmChoice implicit_gemm;  // choose_implicit_gemm's convolutions (GPU targets)
  bool nchw_winograd = false;  // choose_nchw_winograd: a GPU runs the 3x3 convolutions as Winograd
  int int8_weight_limit = 127;  // convert_layout's limit for blocking int8 convolutions
};

// The ungrouped NCHW convolutions of constant weights that `choice` names,
// and the NHWC ones, computed as one matrix product each
// (Conv2dAttrs::implicit_gemm; the build stores NCHW's weights OHWI).
Graph choose_implicit_gemm(const Graph& graph, const ImplicitGemmChoice& choice = true);
// The NCHW convolutions winograd_tile_for picks (not those computed as a
// matrix product) marked to run as Winograd in NCHW (ops/winograd.h), as a
// GPU runs them: convert_layout's mark for a model that keeps its layout.
Graph choose_nchw_winograd(const Graph& graph);

// The pipeline: fuse_quantized_operators, simplify_inference, recognize_layer_norm, recognize_gelu,
// fold_batch_norm, fold_constants, move_elementwise_before_reshape,
// recognize_attention, compose_transposes, attention_sequence_first,
// combine_qkv_projections, convert_layout, cancel_layout_transforms, [choose_implicit_gemm], [choose_nchw_winograd],
// fold_constants, eliminate_dead_nodes. Each pass's output is shape-checked.
Graph optimize(const Graph& graph, const PassOptions& options = {});

}  // namespace tessera::graph
