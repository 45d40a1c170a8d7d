// The host's reference of a DAG (measure/host_reference.h): a half-storage
// dense with its epilogue, computed in fp32 on inputs rounded to halves,
// equals the operator's reference on the same inputs.
#include "measure/host_reference.h"

#include <gtest/gtest.h>

#include "../ops/ops_test_util.h"
#include "ir/half_storage.h"
#include "ops/workloads.h"
#include "support/half.h"

namespace tessera::measure {
namespace {

TEST(HostReference, AHalfStorageDagIsComputedInFp32OnItsRoundedInputs) {
  const ops::Workload w = ops::dense_workload({8, 40}, {24, 40}, ops::Epilogue{.bias = true, .relu = true});
  const ir::ComputeDAG half = ir::with_half_storage(w.dag);
  const ir::ComputeDAG back = ir::with_float32_storage(half);
  for (const auto& t : back.tensors()) EXPECT_EQ(t->dtype, ir::DType::Float32) << t->name;
  EXPECT_EQ(back.workload_key(), w.dag.workload_key());

  std::vector<std::vector<float>> inputs;
  std::vector<const float*> in;
  uint32_t seed = 3;
  for (const auto& p : w.dag.placeholders()) {
    inputs.push_back(ops::test::random_data(p->num_elements(), seed++));
    for (float& x : inputs.back()) x = support::half_to_float(support::float_to_half(x));
  }
  for (const auto& v : inputs) in.push_back(v.data());
  std::vector<float> want(w.dag.outputs()[0]->num_elements()), got(want.size(), -7.0f);
  w.reference(in, want.data());
  host_reference(half)(in, got.data());
  EXPECT_LE(ops::test::max_relative_error(got, want), 1e-5);
}

}  // namespace
}  // namespace tessera::measure
