// What every GPU backend inherits: the cache flush writes twice the device's
// cache into one buffer allocated once; memory of another library crosses
// only where the backend addresses memory by pointer (never on OpenCL).
#include "runtime/gpu_backend.h"

#include <gtest/gtest.h>

#include "runtime/opencl_device.h"
#include "tessera/error.h"

namespace tessera::runtime {
namespace {

// A device that records what is asked of it.
class RecordingBackend : public GpuBackend {
 public:
  std::string device_name() const override { return "recording device"; }
  int allocate(size_t bytes) override {
    allocated.push_back(bytes);
    return static_cast<int>(allocated.size()) - 1;
  }
  void write(int buffer, const void*, size_t bytes) override { writes.emplace_back(buffer, bytes); }
  void read(int, void*, size_t) override {}
  void load(const GpuCode&) override {}
  void launch(const GpuLaunch&, const std::vector<int>&) override {}
  void begin_timing() override {}
  double finish() override { return 0; }

  std::vector<size_t> allocated;
  std::vector<std::pair<int, size_t>> writes;

 protected:
  size_t cache_bytes() const override { return 1000; }
};

TEST(GpuBackend, CacheFlushWritesTwiceTheCacheIntoOneBuffer) {
  RecordingBackend b;
  b.allocate(16);  // an argument's buffer, before the first flush
  b.flush_cache();
  b.flush_cache();
  ASSERT_EQ(b.allocated, (std::vector<size_t>{16, 2000}));
  EXPECT_EQ(b.writes, (std::vector<std::pair<int, size_t>>{{1, 2000}, {1, 2000}}));
}

TEST(GpuBackend, DeviceMemoryOfAnotherLibraryIsRefusedByDefaultNamingTheDevice) {
  RecordingBackend b;
  const int buffer = b.allocate(64);
  try {
    b.copy_from_device_pointer(buffer, 0x1000, 64);
    FAIL() << "expected tessera::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recording device takes device memory only through host memory"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(b.copy_to_device_pointer(buffer, 0x1000, 64), Error);
}

TEST(GpuBackend, OpenClRefusesDevicePointers) {
  if (std::string why = opencl_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<GpuBackend> b = make_gpu_backend("opencl");
  const int buffer = b->allocate(64);
  EXPECT_THROW(b->copy_from_device_pointer(buffer, 0x1000, 64), Error);
  b->flush_cache();  // 128 MiB written to the device: it survives, and the buffer is still there
  std::vector<float> host(16, 3.0f), back(16, 0.0f);
  b->write(buffer, host.data(), 64);
  b->read(buffer, back.data(), 64);
  EXPECT_EQ(back, host);
}

}  // namespace
}  // namespace tessera::runtime
