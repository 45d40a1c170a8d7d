#include "onednn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "tessera/error.h"

#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#endif

namespace tessera::baseline {

using dnnl::memory;
using tag = memory::format_tag;

void set_threads(int n) {
  if (n < 1) throw Error(fmt::format("oneDNN: thread count must be at least 1, got {}", n));
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  // Sets the calling thread's OpenMP team size, which oneDNN reads both when
  // it creates a primitive (blocking decisions) and when it runs one.
  omp_set_num_threads(n);
#elif DNNL_CPU_RUNTIME == DNNL_RUNTIME_SEQ
  if (n != 1) throw Error("oneDNN: this build is sequential, only 1 thread is possible");
#else
  // A TBB or threadpool build would need its own arena here; none is installed.
  throw Error("oneDNN: set_threads supports only OpenMP and sequential builds");
#endif
}

int max_threads() {
#if DNNL_CPU_RUNTIME == DNNL_RUNTIME_OMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

std::string version() {
  const dnnl_version_t* v = dnnl::version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "threadpool";
  return fmt::format("oneDNN {}.{}.{} ({})", v->major, v->minor, v->patch, runtime);
}

void set_max_isa(const std::string& isa) {
  static const std::pair<const char*, dnnl::cpu_isa> kIsas[] = {{"avx512", dnnl::cpu_isa::avx512_core},
                                                                {"avx2", dnnl::cpu_isa::avx2},
                                                                {"avx", dnnl::cpu_isa::avx},
                                                                {"sse", dnnl::cpu_isa::sse41}};
  for (const auto& [name, value] : kIsas) {
    if (isa != name) continue;
    const dnnl::status status = dnnl::set_max_cpu_isa(value);
    if (status != dnnl::status::success)
      throw Error(
          fmt::format("oneDNN refused to cap its ISA at {} (status {}): it must be set before any "
                      "primitive is created, and this build must allow it",
                      isa, static_cast<int>(status)));
    return;
  }
  throw Error("oneDNN ISA '" + isa + "': expected avx512, avx2, avx or sse");
}

int64_t Conv2dParams::out_height() const {
  return (height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
}
int64_t Conv2dParams::out_width() const {
  return (width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
}
double Conv2dParams::flop_count() const {
  return 2.0 * batch * out_channels * out_height() * out_width() * (in_channels / groups) * kernel_h *
         kernel_w;
}
double DenseParams::flop_count() const { return 2.0 * batch * out_features * in_features; }

struct OneDnnLayer::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  memory::desc plain_dst;  // what output() converts dst into
  std::string implementation;
  double flop_count = 0;

  // A memory in oneDNN's chosen format `want` holding `data`, given in `plain`.
  memory import(const memory::desc& want, const memory::desc& plain, const float* data) {
    memory user(plain, engine);
    std::memcpy(user.get_data_handle(), data, plain.get_size());
    if (want == plain) return user;
    memory packed(want, engine);
    dnnl::reorder(user, packed).execute(stream, user, packed);
    stream.wait();
    return packed;
  }
};

OneDnnLayer::OneDnnLayer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnLayer::OneDnnLayer(OneDnnLayer&&) noexcept = default;
OneDnnLayer& OneDnnLayer::operator=(OneDnnLayer&&) noexcept = default;
OneDnnLayer::~OneDnnLayer() = default;

void OneDnnLayer::run() {
  impl_->primitive.execute(impl_->stream, impl_->args);
  impl_->stream.wait();
}

std::vector<float> OneDnnLayer::output() const {
  memory& dst = impl_->args.at(DNNL_ARG_DST);
  memory plain(impl_->plain_dst, impl_->engine);
  dnnl::reorder(dst, plain).execute(impl_->stream, dst, plain);
  impl_->stream.wait();
  std::vector<float> out(impl_->plain_dst.get_size() / sizeof(float));
  std::memcpy(out.data(), plain.get_data_handle(), impl_->plain_dst.get_size());
  return out;
}

std::string OneDnnLayer::implementation() const { return impl_->implementation; }
double OneDnnLayer::flop_count() const { return impl_->flop_count; }

namespace {

dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr attr;
  if (!relu) return attr;
  dnnl::post_ops ops;
#if DNNL_VERSION_MAJOR >= 3
  ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#else
  ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#endif
  attr.set_post_ops(ops);
  return attr;
}

memory::desc any_desc(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, tag::any);
}
memory::desc plain_desc(const memory::dims& dims, tag t) {
  return memory::desc(dims, memory::data_type::f32, t);
}

// Fills args and the rest of impl from a primitive descriptor of either kind.
template <typename PrimitiveDesc, typename Primitive>
void set_up(OneDnnLayer::Impl& impl, const PrimitiveDesc& pd, const memory::desc& plain_src,
            const memory::desc& plain_weight, const memory::desc& plain_bias, const float* input,
            const float* weight, const float* bias) {
  impl.primitive = Primitive(pd);
  impl.implementation = pd.impl_info_str();
  impl.args[DNNL_ARG_SRC] = impl.import(pd.src_desc(), plain_src, input);
  impl.args[DNNL_ARG_WEIGHTS] = impl.import(pd.weights_desc(), plain_weight, weight);
  if (bias) impl.args[DNNL_ARG_BIAS] = impl.import(pd.bias_desc(), plain_bias, bias);
  impl.args[DNNL_ARG_DST] = memory(pd.dst_desc(), impl.engine);
  memory::desc scratchpad = pd.scratchpad_desc();
  if (scratchpad.get_size() > 0) impl.args[DNNL_ARG_SCRATCHPAD] = memory(scratchpad, impl.engine);
}

}  // namespace

// The impl is built in a helper so that the base class gets a finished one.
static std::unique_ptr<OneDnnLayer::Impl> make_conv2d(const Conv2dParams& p, const float* input,
                                                      const float* weight, const float* bias) {
  const std::string what = fmt::format(
      "oneDNN conv2d (input {}x{}x{}x{}, weight {}x{}x{}x{}, stride {}, pad {},{},{},{}, dilation "
      "{}, groups {})",
      p.batch, p.in_channels, p.height, p.width, p.out_channels, p.groups > 0 ? p.in_channels / p.groups : 0,
      p.kernel_h, p.kernel_w, p.stride_h, p.pad_top, p.pad_left, p.pad_bottom, p.pad_right, p.dilation_h,
      p.groups);
  if (p.out_height() <= 0 || p.out_width() <= 0 || p.stride_h < 1 || p.stride_w < 1 ||
      p.dilation_h < 1 || p.dilation_w < 1 || p.groups < 1 || p.in_channels % p.groups ||
      p.out_channels % p.groups ||
      std::min({p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}) < 0)
    throw Error(what + ": impossible shape");
  if (bias == nullptr && p.bias) throw Error(what + ": bias requested but no bias data given");
  try {
    auto impl = std::make_unique<OneDnnLayer::Impl>();
    const memory::dims src{p.batch, p.in_channels, p.height, p.width};
    // Grouped: oneDNN's weights carry the group as a leading axis (goihw).
    const memory::dims wei = p.groups == 1 ? memory::dims{p.out_channels, p.in_channels, p.kernel_h, p.kernel_w}
                                           : memory::dims{p.groups, p.out_channels / p.groups,
                                                          p.in_channels / p.groups, p.kernel_h, p.kernel_w};
    const memory::dims dst{p.batch, p.out_channels, p.out_height(), p.out_width()};
    const memory::dims strides{p.stride_h, p.stride_w};
    const memory::dims dilates{p.dilation_h - 1, p.dilation_w - 1};
    const memory::dims pads_before{p.pad_top, p.pad_left};
    const memory::dims pads_after{p.pad_bottom, p.pad_right};
    // An empty descriptor tells oneDNN there is no bias.
    const memory::desc bias_md = p.bias ? plain_desc({p.out_channels}, tag::a) : memory::desc();
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    using Conv = dnnl::convolution_forward;
#if DNNL_VERSION_MAJOR >= 3
    Conv::primitive_desc pd(impl->engine, prop, alg, any_desc(src), any_desc(wei), bias_md,
                            any_desc(dst), strides, dilates, pads_before, pads_after,
                            relu_attr(p.relu));
#else
    Conv::desc desc(prop, alg, any_desc(src), any_desc(wei), bias_md, any_desc(dst), strides,
                    dilates, pads_before, pads_after);
    Conv::primitive_desc pd(desc, relu_attr(p.relu), impl->engine);
#endif
    set_up<Conv::primitive_desc, Conv>(*impl, pd, plain_desc(src, tag::nchw),
                                       plain_desc(wei, p.groups == 1 ? tag::oihw : tag::goihw), bias_md, input, weight,
                                       p.bias ? bias : nullptr);
    impl->plain_dst = plain_desc(dst, tag::nchw);
    impl->flop_count = p.flop_count();
    return impl;
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("{}: {}", what, e.what()));
  }
}

static std::unique_ptr<OneDnnLayer::Impl> make_dense(const DenseParams& p, const float* input,
                                                     const float* weight, const float* bias) {
  const std::string what = fmt::format("oneDNN dense (input {}x{}, weight {}x{})", p.batch,
                                       p.in_features, p.out_features, p.in_features);
  if (p.batch < 1 || p.in_features < 1 || p.out_features < 1)
    throw Error(what + ": impossible shape");
  if (bias == nullptr && p.bias) throw Error(what + ": bias requested but no bias data given");
  try {
    auto impl = std::make_unique<OneDnnLayer::Impl>();
    const memory::dims src{p.batch, p.in_features};
    const memory::dims wei{p.out_features, p.in_features};
    const memory::dims dst{p.batch, p.out_features};
    const memory::desc bias_md = p.bias ? plain_desc({p.out_features}, tag::a) : memory::desc();
    const auto prop = dnnl::prop_kind::forward_inference;
    using Dense = dnnl::inner_product_forward;
#if DNNL_VERSION_MAJOR >= 3
    Dense::primitive_desc pd(impl->engine, prop, any_desc(src), any_desc(wei), bias_md,
                             any_desc(dst), relu_attr(p.relu));
#else
    Dense::desc desc(prop, any_desc(src), any_desc(wei), bias_md, any_desc(dst));
    Dense::primitive_desc pd(desc, relu_attr(p.relu), impl->engine);
#endif
    set_up<Dense::primitive_desc, Dense>(*impl, pd, plain_desc(src, tag::nc),
                                         plain_desc(wei, tag::oi), bias_md, input, weight,
                                         p.bias ? bias : nullptr);
    impl->plain_dst = plain_desc(dst, tag::nc);
    impl->flop_count = p.flop_count();
    return impl;
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("{}: {}", what, e.what()));
  }
}

static std::unique_ptr<OneDnnLayer::Impl> make_softmax(const SoftmaxParams& p, const float* input) {
  const std::string what = fmt::format("oneDNN softmax (input {}x{})", p.rows, p.cols);
  if (p.rows < 1 || p.cols < 1) throw Error(what + ": impossible shape");
  try {
    auto impl = std::make_unique<OneDnnLayer::Impl>();
    const memory::desc md = plain_desc({p.rows, p.cols}, tag::nc);
    const auto prop = dnnl::prop_kind::forward_inference;
    using Softmax = dnnl::softmax_forward;
#if DNNL_VERSION_MAJOR >= 3
    Softmax::primitive_desc pd(impl->engine, prop, dnnl::algorithm::softmax_accurate, md, md, 1);
#else
    Softmax::desc desc(prop, md, 1);
    Softmax::primitive_desc pd(desc, impl->engine);
#endif
    impl->primitive = Softmax(pd);
    impl->implementation = pd.impl_info_str();
    impl->args[DNNL_ARG_SRC] = impl->import(pd.src_desc(), md, input);
    impl->args[DNNL_ARG_DST] = memory(pd.dst_desc(), impl->engine);
    memory::desc scratchpad = pd.scratchpad_desc();
    if (scratchpad.get_size() > 0) impl->args[DNNL_ARG_SCRATCHPAD] = memory(scratchpad, impl->engine);
    impl->plain_dst = md;
    // max, subtract, exp, sum, divide: what Tessera's softmax counts too.
    impl->flop_count = 5.0 * p.rows * p.cols;
    return impl;
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("{}: {}", what, e.what()));
  }
}

OneDnnSoftmax::OneDnnSoftmax(const SoftmaxParams& params, const float* input)
    : OneDnnLayer(make_softmax(params, input)) {}

OneDnnConv2d::OneDnnConv2d(const Conv2dParams& params, const float* input, const float* weight,
                           const float* bias)
    : OneDnnLayer(make_conv2d(params, input, weight, bias)), params_(params) {}

OneDnnDense::OneDnnDense(const DenseParams& params, const float* input, const float* weight,
                         const float* bias)
    : OneDnnLayer(make_dense(params, input, weight, bias)), params_(params) {}

}  // namespace tessera::baseline
