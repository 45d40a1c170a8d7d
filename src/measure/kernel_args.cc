#include "measure/kernel_args.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tessera/error.h"

namespace tessera::measure {

uint64_t input_seed(size_t index) {
  // Distinct, fixed seeds; the constant only keeps them away from small numbers
  // that other code might also use.
  return 0x7e55e7a0ULL + 1000003ULL * index;
}

std::vector<runtime::NDArray> make_inputs(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<runtime::NDArray> arrays;
  arrays.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    runtime::NDArray a(shapes[i]);
    a.fill_random(input_seed(i));
    arrays.push_back(std::move(a));
  }
  return arrays;
}

std::vector<void*> kernel_arg_pointers(std::vector<runtime::NDArray>& inputs,
                                       std::vector<runtime::NDArray>& outputs) {
  std::vector<void*> args;
  args.reserve(inputs.size() + outputs.size());
  for (auto& a : inputs) args.push_back(a.data());
  for (auto& a : outputs) args.push_back(a.data());
  return args;
}

FlushList flush_list_of(const std::vector<runtime::NDArray>& inputs,
                        const std::vector<runtime::NDArray>& outputs) {
  FlushList flush;
  for (size_t i = 1; i < inputs.size(); ++i)
    flush.emplace_back(inputs[i].data(), static_cast<size_t>(inputs[i].size()) * sizeof(float));
  for (const auto& a : outputs) flush.emplace_back(a.data(), static_cast<size_t>(a.size()) * sizeof(float));
  return flush;
}

std::string OutputComparison::describe() const {
  std::string text = fmt::format("max abs error {:g}, max rel error {:g}", max_abs_error, max_rel_error);
  if (first_bad_index >= 0)
    text += fmt::format(", first mismatch at {}: got {:g} want {:g}", first_bad_index,
                        first_bad_got, first_bad_want);
  return text;
}

OutputComparison compare_output(const float* got, const float* want, int64_t size, double tolerance) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // The scale of the finite reference values; where the reference itself is
  // NaN or infinite (a NaN input, an overflow the frameworks make too) the
  // kernel must give the same non-finite value.
  double scale = 0;
  for (int64_t i = 0; i < size; ++i)
    if (std::isfinite(want[i])) scale = std::max(scale, std::fabs(double(want[i])));
  OutputComparison c;
  for (int64_t i = 0; i < size; ++i) {
    double abs_err = std::fabs(double(got[i]) - double(want[i]));
    if (!std::isfinite(want[i])) abs_err = (std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]) ? 0 : kInf;
    if (std::isnan(abs_err)) abs_err = kInf;
    c.max_abs_error = std::max(c.max_abs_error, abs_err);
    // Written as !(x <= tol) so that NaN and inf count as mismatches.
    if (!(abs_err <= tolerance * scale) && c.first_bad_index < 0) {
      c.first_bad_index = i;
      c.first_bad_got = got[i];
      c.first_bad_want = want[i];
    }
  }
  c.max_rel_error = scale > 0 ? c.max_abs_error / scale : (c.max_abs_error == 0 ? 0.0 : kInf);
  c.ok = c.first_bad_index < 0;
  return c;
}

OutputComparison compare_output(const runtime::NDArray& got, const runtime::NDArray& want, double tolerance) {
  if (got.shape() != want.shape())
    throw Error(fmt::format("cannot compare outputs of shapes [{}] and [{}]",
                            fmt::join(got.shape(), ","), fmt::join(want.shape(), ",")));
  return compare_output(got.data(), want.data(), got.size(), tolerance);
}

}  // namespace tessera::measure
