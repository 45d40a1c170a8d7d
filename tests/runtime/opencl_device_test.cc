// The OpenCL device: kernels that share work-group local memory compute what
// the test computes on the host; build errors carry the build log; launch
// errors name the kernel and the OpenCL error; timed launches take time.
#include "runtime/opencl_device.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tessera/error.h"

namespace tessera::runtime {
namespace {

#define SKIP_WITHOUT_OPENCL()                                                \
  do {                                                                       \
    if (std::string reason = opencl_unavailable_reason(); !reason.empty()) { \
      GTEST_SKIP() << reason;                                                \
    }                                                                        \
  } while (0)

// Each work-group of 64 reverses its 64 floats through local memory; the
// barrier makes the other work-items' stores visible before the loads.
const char* const kReverseSource = R"(
__kernel void reverse64(__global const float* in, __global float* out) {
  __local float tile[64];
  size_t l = get_local_id(0);
  size_t base = get_group_id(0) * 64;
  tile[l] = in[base + l];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[base + l] = tile[63 - l] * 2.0f + (float)get_group_id(0);
}

__attribute__((reqd_work_group_size(64, 1, 1)))
__kernel void fixed64(__global float* out) { out[get_global_id(0)] = 1.0f; }

__kernel void busy(__global float* out) {
  size_t i = get_global_id(0);
  float x = (float)i;
  for (int k = 0; k < 2000; ++k) x = x * 0.999f + 1.0f;
  out[i] = x;
}
)";

TEST(OpenClDevice, DescribesTheDevice) {
  SKIP_WITHOUT_OPENCL();
  OpenClDevice& device = OpenClDevice::get();
  EXPECT_FALSE(device.name().empty());
  EXPECT_NE(device.name().find(" ("), std::string::npos) << device.name();
  EXPECT_GE(device.max_work_group_size(), 64u);
  EXPECT_GT(device.local_memory_bytes(), 0u);
  EXPECT_EQ(&device, &OpenClDevice::get());
}

TEST(OpenClDevice, LocalMemoryReversalMatchesHost) {
  SKIP_WITHOUT_OPENCL();
  OpenClDevice& device = OpenClDevice::get();
  const size_t groups = 16, n = groups * 64;
  std::vector<float> input(n);
  for (size_t i = 0; i < n; ++i) input[i] = static_cast<float>(i) * 0.5f - 100.0f;
  OpenClDevice::Buffer in = device.allocate(n * sizeof(float));
  OpenClDevice::Buffer out = device.allocate(n * sizeof(float));
  EXPECT_EQ(in.bytes(), n * sizeof(float));
  device.write(in, input.data(), n * sizeof(float));
  OpenClDevice::Program program = device.build(kReverseSource);
  device.launch(program, "reverse64", {&in, &out}, {groups, 1, 1}, {64, 1, 1});
  std::vector<float> output(n, -1.0f);
  device.read(out, output.data(), n * sizeof(float));
  for (size_t g = 0; g < groups; ++g) {
    for (size_t l = 0; l < 64; ++l) {
      float expected = input[g * 64 + 63 - l] * 2.0f + static_cast<float>(g);
      ASSERT_EQ(output[g * 64 + l], expected) << "group " << g << " item " << l;
    }
  }
  // The cached kernel object runs again, on other buffers.
  OpenClDevice::Buffer again = device.allocate(n * sizeof(float));
  device.launch(program, "reverse64", {&out, &again}, {groups, 1, 1}, {64, 1, 1});
  std::vector<float> twice(n);
  device.read(again, twice.data(), n * sizeof(float));
  EXPECT_EQ(twice[0], output[63] * 2.0f);
}

TEST(OpenClDevice, SyntaxErrorThrowsWithTheBuildLog) {
  SKIP_WITHOUT_OPENCL();
  const std::string bad = "__kernel void k(__global float* p) { p[0] = undeclared_thing; }\n";
  try {
    OpenClDevice::get().build(bad);
    FAIL() << "expected tessera::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << message;
    EXPECT_NE(message.find("undeclared_thing"), std::string::npos) << message;
  }
}

TEST(OpenClDevice, UnknownKernelThrowsNamingIt) {
  SKIP_WITHOUT_OPENCL();
  OpenClDevice& device = OpenClDevice::get();
  OpenClDevice::Program program = device.build(kReverseSource);
  OpenClDevice::Buffer buffer = device.allocate(64 * sizeof(float));
  try {
    device.launch(program, "no_such_kernel", {&buffer}, {1, 1, 1}, {64, 1, 1});
    FAIL() << "expected tessera::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("no_such_kernel"), std::string::npos) << message;
    EXPECT_NE(message.find("CL_INVALID_KERNEL_NAME"), std::string::npos) << message;
  }
}

TEST(OpenClDevice, WrongWorkGroupSizeThrowsNamingTheKernelAndCode) {
  SKIP_WITHOUT_OPENCL();
  OpenClDevice& device = OpenClDevice::get();
  OpenClDevice::Program program = device.build(kReverseSource);
  OpenClDevice::Buffer buffer = device.allocate(64 * sizeof(float));
  try {
    device.launch(program, "fixed64", {&buffer}, {2, 1, 1}, {32, 1, 1});  // requires 64
    FAIL() << "expected tessera::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("fixed64"), std::string::npos) << message;
    EXPECT_NE(message.find("CL_INVALID_WORK_GROUP_SIZE"), std::string::npos) << message;
  }
}

TEST(OpenClDevice, WrongArgumentCountThrowsEvenAfterAGoodLaunch) {
  SKIP_WITHOUT_OPENCL();
  // A kernel object keeps its last arguments; a short list must not reuse them.
  OpenClDevice& device = OpenClDevice::get();
  OpenClDevice::Program program = device.build(kReverseSource);
  OpenClDevice::Buffer a = device.allocate(64 * sizeof(float));
  OpenClDevice::Buffer b = device.allocate(64 * sizeof(float));
  device.launch(program, "reverse64", {&a, &b}, {1, 1, 1}, {64, 1, 1});
  try {
    device.launch(program, "reverse64", {&a}, {1, 1, 1}, {64, 1, 1});
    FAIL() << "expected tessera::Error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("reverse64"), std::string::npos) << message;
    EXPECT_NE(message.find("takes 2 arguments, given 1"), std::string::npos) << message;
  }
}

TEST(OpenClDevice, ConcurrentLaunchesKeepTheirOwnArguments) {
  SKIP_WITHOUT_OPENCL();
  // Two threads share one cached kernel object; each must read back its own input reversed.
  OpenClDevice& device = OpenClDevice::get();
  OpenClDevice::Program program = device.build(kReverseSource);
  auto worker = [&](float offset, int* failures) {
    std::vector<float> input(64), output(64);
    for (int i = 0; i < 64; ++i) input[i] = offset + static_cast<float>(i);
    OpenClDevice::Buffer in = device.allocate(sizeof(float) * 64);
    OpenClDevice::Buffer out = device.allocate(sizeof(float) * 64);
    device.write(in, input.data(), sizeof(float) * 64);
    for (int round = 0; round < 20; ++round) {
      device.launch(program, "reverse64", {&in, &out}, {1, 1, 1}, {64, 1, 1});
      device.read(out, output.data(), sizeof(float) * 64);
      if (output[0] != input[63] * 2.0f || output[63] != input[0] * 2.0f) ++*failures;
    }
  };
  int failures_a = 0, failures_b = 0;
  std::thread a(worker, 1000.0f, &failures_a);
  std::thread b(worker, -5000.0f, &failures_b);
  a.join();
  b.join();
  EXPECT_EQ(failures_a, 0);
  EXPECT_EQ(failures_b, 0);
}

TEST(OpenClDevice, CopiesBeyondTheBufferThrow) {
  SKIP_WITHOUT_OPENCL();
  OpenClDevice& device = OpenClDevice::get();
  OpenClDevice::Buffer buffer = device.allocate(16);
  std::vector<char> host(32);
  EXPECT_THROW(device.write(buffer, host.data(), 32), Error);
  EXPECT_THROW(device.read(buffer, host.data(), 32), Error);
}

TEST(OpenClDevice, TimedLaunchReturnsPositiveDeviceTime) {
  SKIP_WITHOUT_OPENCL();
  OpenClDevice& device = OpenClDevice::get();
  OpenClDevice::Program program = device.build(kReverseSource);
  const size_t n = 64 * 64;
  OpenClDevice::Buffer out = device.allocate(n * sizeof(float));
  double seconds = device.launch_timed(program, "busy", {&out}, {64, 1, 1}, {64, 1, 1});
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 10.0);
  std::vector<float> result(n);
  device.read(out, result.data(), n * sizeof(float));
  float x = 5.0f;
  for (int k = 0; k < 2000; ++k) x = x * 0.999f + 1.0f;
  EXPECT_NEAR(result[5], x, 1e-3f * x);
}

}  // namespace
}  // namespace tessera::runtime
