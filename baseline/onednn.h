#pragma once
// oneDNN as the named baseline of Tessera's benchmarks: fp32 forward inference
// of conv2d, dense and softmax on the CPU.
//
// oneDNN picks its own memory formats (format_tag::any), and the user's plain
// NCHW / OIHW / (M,K) data is reordered into them once, at construction. run()
// executes the primitive alone, so a timing of it compares fairly with a
// Tessera kernel that takes pre-packed (NCHWc) inputs.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::baseline {

// Threads of the oneDNN primitives created and run by the calling thread after
// this call (this build of oneDNN runs on OpenMP). Call it before constructing a
// layer: oneDNN picks blocking for the thread count it is created with.
void set_threads(int n);
int max_threads();
// "oneDNN 2.6.3 (OpenMP)": what the numbers were measured against.
std::string version();
// Caps the vector ISA oneDNN may use: "avx512" (avx512_core), "avx2", "avx" or
// "sse" (sse41), as dnnl::set_max_cpu_isa / ONEDNN_MAX_CPU_ISA. oneDNN fixes
// its ISA when it creates the first primitive, so call this before. Throws
// tessera::Error for an unknown name or when oneDNN refuses.
void set_max_isa(const std::string& isa);

struct Conv2dParams {
  int64_t batch = 1, in_channels = 0, height = 0, width = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // 1 = dense kernel (oneDNN itself counts from 0)
  int64_t groups = 1;                      // each group: in_channels/groups in, out_channels/groups out
  bool bias = false;
  bool relu = false;

  void set_padding(int64_t pad) { pad_top = pad_left = pad_bottom = pad_right = pad; }
  int64_t out_height() const;
  int64_t out_width() const;
  double flop_count() const;  // a multiply-add counts two
};

struct DenseParams {         // out(M, N) = in(M, K) x weight(N, K)^T (+ bias(N))
  int64_t batch = 1;         // M
  int64_t in_features = 0;   // K
  int64_t out_features = 0;  // N
  bool bias = false;
  bool relu = false;

  double flop_count() const;
};

struct SoftmaxParams {       // out(R, C) = softmax of each row of in(R, C)
  int64_t rows = 1;
  int64_t cols = 0;
};

// One oneDNN primitive with its arguments already in oneDNN's formats.
class OneDnnLayer {
 public:
  OneDnnLayer(OneDnnLayer&&) noexcept;
  OneDnnLayer& operator=(OneDnnLayer&&) noexcept;
  ~OneDnnLayer();

  void run();                          // executes the primitive, waits for it
  std::vector<float> output() const;   // dst in plain row-major order (NCHW, or M x N)
  std::string implementation() const;  // oneDNN's kernel, e.g. "brg:avx512_core"
  double flop_count() const;           // of one run; a multiply-add counts two

  struct Impl;  // opaque: keeps dnnl.hpp out of this header

 protected:
  explicit OneDnnLayer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class OneDnnConv2d : public OneDnnLayer {
 public:
  // input: N*C*H*W (NCHW), weight: O*C*KH*KW (OIHW), bias: O values or nullptr.
  // The data is copied; throws tessera::Error on a shape oneDNN rejects.
  OneDnnConv2d(const Conv2dParams& params, const float* input, const float* weight,
               const float* bias = nullptr);
  const Conv2dParams& params() const { return params_; }

 private:
  Conv2dParams params_;
};

class OneDnnDense : public OneDnnLayer {
 public:
  // input: M*K, weight: N*K, bias: N values or nullptr.
  OneDnnDense(const DenseParams& params, const float* input, const float* weight,
              const float* bias = nullptr);
  const DenseParams& params() const { return params_; }

 private:
  DenseParams params_;
};

class OneDnnSoftmax : public OneDnnLayer {
 public:
  // input: R*C, softmax over each row (the last axis).
  OneDnnSoftmax(const SoftmaxParams& params, const float* input);
};

}  // namespace tessera::baseline
