#include "runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace tessera::runtime {
namespace {

struct Coverage {
  std::vector<std::atomic<int>> hits;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  explicit Coverage(int64_t n) : hits(n) {}
};

void record(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<Coverage*>(closure);
  for (int64_t i = begin; i < end; ++i) c->hits[i]++;
  std::lock_guard<std::mutex> lock(c->mutex);
  c->threads.insert(std::this_thread::get_id());
}

class RuntimeThreadPool : public ::testing::Test {
 protected:
  void TearDown() override { set_num_threads(0); }
};

TEST_F(RuntimeThreadPool, EveryIterationRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    for (int64_t n : {1, 2, 5, 1000}) {
      Coverage c(n);
      parallel_for(record, &c, n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.hits[i].load(), 1) << threads << " threads, n=" << n;
    }
  }
}

TEST_F(RuntimeThreadPool, NeverUsesMoreThreadsThanRequested) {
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(num_threads(), threads);
    for (int round = 0; round < 20; ++round) {
      Coverage c(64);
      parallel_for(record, &c, 64);
      EXPECT_LE(static_cast<int>(c.threads.size()), threads);
      if (threads == 1) EXPECT_EQ(*c.threads.begin(), std::this_thread::get_id());
    }
  }
}

TEST_F(RuntimeThreadPool, ZeroMeansOneThreadPerCore) {
  set_num_threads(0);
  EXPECT_EQ(num_threads(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

void nested(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<Coverage*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    // A parallel loop inside a chunk runs serially on the chunk's thread.
    Coverage inner(10);
    parallel_for(record, &inner, 10);
    int sum = 0;
    for (auto& h : inner.hits) sum += h.load();
    if (sum == 10 && inner.threads.size() == 1) c->hits[i]++;
  }
}

TEST_F(RuntimeThreadPool, NestedParallelForRunsSerially) {
  set_num_threads(2);
  Coverage c(16);
  parallel_for(nested, &c, 16);
  for (auto& h : c.hits) ASSERT_EQ(h.load(), 1);
}

TEST_F(RuntimeThreadPool, ConcurrentCallersBothFinish) {
  set_num_threads(2);
  Coverage a(500), b(500);
  std::thread other([&] {
    for (int i = 0; i < 50; ++i) parallel_for(record, &a, 10);
  });
  for (int i = 0; i < 50; ++i) parallel_for(record, &b, 10);
  other.join();
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(a.hits[i].load(), 50);
    EXPECT_EQ(b.hits[i].load(), 50);
  }
}

// The order in which pieces start, by thread. The piece starting at 0 holds
// its thread until another thread has started a piece (or 5 s pass).
struct PieceLog {
  std::mutex mutex;
  std::vector<std::pair<std::thread::id, int64_t>> starts;  // (thread, begin)
  std::atomic<int> others{0};
  std::thread::id caller = std::this_thread::get_id();
  int64_t hold_until_done = -1;  // >= 0: piece 0 waits until this many iterations ran elsewhere
  std::atomic<int64_t> done_elsewhere{0};
};

void log_piece(void* closure, int64_t begin, int64_t end) {
  auto* log = static_cast<PieceLog*>(closure);
  {
    std::lock_guard<std::mutex> lock(log->mutex);
    log->starts.emplace_back(std::this_thread::get_id(), begin);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  if (begin == 0) {
    const int64_t wanted = log->hold_until_done >= 0 ? log->hold_until_done : 1;
    while (log->done_elsewhere.load() < wanted && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  } else {
    log->done_elsewhere += end - begin;
  }
}

TEST_F(RuntimeThreadPool, EachThreadStartsOnItsOwnShareOfTheLoop) {
  // 2 threads, 8 pieces: the caller owns pieces 0-3, the worker 4-7. While
  // the caller is held in piece 0, the worker starts on its own share (a
  // shared counter would hand it piece 1), so consecutive loops split alike
  // keep each part on one core.
  set_num_threads(2);
  for (int round = 0; round < 5; ++round) {
    PieceLog log;
    parallel_for(log_piece, &log, 8);
    std::vector<int64_t> worker_starts;
    for (const auto& [thread, begin] : log.starts)
      if (thread != log.caller) worker_starts.push_back(begin);
    ASSERT_FALSE(worker_starts.empty()) << "round " << round;
    EXPECT_EQ(worker_starts.front(), 4) << "round " << round;
  }
}

TEST_F(RuntimeThreadPool, AHeldThreadHasItsShareTakenByTheOthers) {
  // The thread running piece 0 is held until the other 7 iterations ran
  // elsewhere: they can only finish if its own share is taken off it.
  set_num_threads(2);
  PieceLog log;
  log.hold_until_done = 7;
  const auto start = std::chrono::steady_clock::now();
  parallel_for(log_piece, &log, 8);
  EXPECT_EQ(log.done_elsewhere.load(), 7);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4)) << "piece 0 waited out its deadline";
  EXPECT_EQ(log.starts.size(), 8u);
}

TEST_F(RuntimeThreadPool, ForkedChildBuildsItsOwnPool) {
  set_num_threads(2);
  Coverage warm(100);
  parallel_for(record, &warm, 100);  // the parent's pool now has a worker
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a hang in the child must not hang the test
    Coverage c(100);
    parallel_for(record, &c, 100);
    bool ok = true;
    for (auto& h : c.hits) ok = ok && h.load() == 1;
    _exit(ok && c.threads.size() <= 2 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace tessera::runtime
