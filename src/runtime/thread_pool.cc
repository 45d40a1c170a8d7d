// The process-wide pool behind parallel_for.
//
// Each worker owns a slot that the dispatching thread fills before bumping the
// slot's sequence number; a worker spins on its own slot for a short while
// (kernels can be as short as tens of microseconds, and a futex wake costs about
// as much) and then sleeps on a shared condition variable. The dispatcher works
// too and waits for the others, so at most num_threads() threads work.
//
// The loop is cut into a few contiguous pieces per thread. Each thread owns
// an even share of them, in order (the dispatcher the first), and takes its
// own first; then it takes what is left of the others'. So in the usual case
// a thread works on the same part of every loop, and consecutive kernels
// that split their outer axis alike (channel chunks, say) find their inputs
// in the core's own cache; but a thread whose core is slowed for a while (a
// noisy neighbour, an interrupt) has pieces taken off it instead of holding
// the whole loop back, as a static split would.
//
// Fork safety: a forked child inherits the pool's memory but none of its
// threads. The pool remembers the pid that built it; a process with another pid
// abandons (deliberately leaks) the inherited pool and builds its own.
#include "runtime/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TESSERA_CPU_RELAX() _mm_pause()
#else
#define TESSERA_CPU_RELAX() std::this_thread::yield()
#endif

namespace tessera::runtime {
namespace {

// How long an idle worker, or a dispatcher waiting for workers, busy-waits
// before it gives the core away.
constexpr auto kSpinDuration = std::chrono::microseconds(200);

// Pieces of a parallel loop per thread: enough that a slowed thread can give
// work away, few enough that each piece stays a long contiguous range.
constexpr int kPiecesPerThread = 4;

std::atomic<int> g_requested_threads{0};  // 0: one per core
thread_local bool t_inside_pool_job = false;

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Spins until done() holds or the spin budget is spent; true when done() held.
template <class Done>
bool spin_until(const Done& done) {
  auto deadline = std::chrono::steady_clock::now() + kSpinDuration;
  for (int i = 0;; ++i) {
    if (done()) return true;
    TESSERA_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

class ThreadPool {
 public:
  ~ThreadPool() = delete;  // lives until exit (and is leaked by forked children)

  // Runs [0, n) on `threads` threads (the calling one among them), in
  // `pieces` pieces taken in order.
  void run(ParallelBody body, void* closure, int64_t n, int threads, int64_t pieces) {
    grow_to(threads - 1);
    job_ = Job{body, closure, n, pieces, threads};
    for (int t = 0; t < threads; ++t) shares_[t]->next.store(share_begin(t), std::memory_order_relaxed);
    pending_.store(threads - 1, std::memory_order_relaxed);
    for (int w = 0; w < threads - 1; ++w) slots_[w]->sequence.fetch_add(1, std::memory_order_seq_cst);
    // Pairs with the sleeper count a worker raises before its last check of
    // its sequence number: one of the two sides sees the other's write.
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    t_inside_pool_job = true;
    take_pieces(0);
    t_inside_pool_job = false;
    auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
    while (!spin_until(all_done)) std::this_thread::yield();
  }

  // Serialises dispatch: a second thread calling parallel_for meanwhile runs serially.
  std::mutex& dispatch_mutex() { return dispatch_mutex_; }

 private:
  struct WorkerSlot {
    std::atomic<uint64_t> sequence{0};
    int thread = 0;  // its share of a loop: the dispatcher is 0
  };
  struct alignas(64) Share {  // the next piece of one thread's share; a line of its own
    std::atomic<int64_t> next{0};
  };
  struct Job {
    ParallelBody body = nullptr;
    void* closure = nullptr;
    int64_t n = 0, pieces = 0;
    int threads = 1;
  };

  int64_t share_begin(int t) const { return job_.pieces * t / job_.threads; }

  // Thread `self`'s own share first, then what the others have not taken.
  void take_pieces(int self) {
    const Job job = job_;
    for (int k = 0; k < job.threads; ++k) {
      const int t = (self + k) % job.threads;
      const int64_t end = job.pieces * (t + 1) / job.threads;
      for (;;) {
        const int64_t p = shares_[t]->next.fetch_add(1, std::memory_order_relaxed);
        if (p >= end) break;
        job.body(job.closure, job.n * p / job.pieces, job.n * (p + 1) / job.pieces);
      }
    }
  }

  void grow_to(int workers) {
    while (static_cast<int>(shares_.size()) < workers + 1) shares_.push_back(std::make_unique<Share>());
    while (static_cast<int>(slots_.size()) < workers) {
      slots_.push_back(std::make_unique<WorkerSlot>());
      WorkerSlot* slot = slots_.back().get();
      slot->thread = static_cast<int>(slots_.size());
      std::thread(&ThreadPool::work, this, slot).detach();
    }
  }

  void work(WorkerSlot* slot) {
    t_inside_pool_job = true;  // a parallel loop inside a chunk runs serially
    uint64_t seen = 0;
    for (;;) {
      auto has_job = [&] { return slot->sequence.load(std::memory_order_acquire) != seen; };
      if (!spin_until(has_job)) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, has_job);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = slot->sequence.load(std::memory_order_acquire);
      take_pieces(slot->thread);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::unique_ptr<WorkerSlot>> slots_;
  Job job_;  // written before the slots' sequence numbers are bumped
  std::vector<std::unique_ptr<Share>> shares_;  // one per thread of the widest loop so far
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::mutex dispatch_mutex_;
};

ThreadPool* pool_of_this_process() {
  static std::mutex creation_mutex;
  static ThreadPool* pool = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(creation_mutex);
  if (pool == nullptr || owner != getpid()) {
    pool = new ThreadPool();  // never freed: workers may outlive static destruction
    owner = getpid();
  }
  return pool;
}

}  // namespace

void parallel_for(ParallelBody body, void* closure, int64_t n) {
  if (n <= 0) return;
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), n));
  if (threads <= 1 || t_inside_pool_job) {
    body(closure, 0, n);
    return;
  }
  ThreadPool* pool = pool_of_this_process();
  std::unique_lock<std::mutex> lock(pool->dispatch_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) {
    body(closure, 0, n);
    return;
  }
  pool->run(body, closure, n, threads, std::min<int64_t>(n, int64_t{kPiecesPerThread} * threads));
}

void set_num_threads(int n) { g_requested_threads.store(std::max(n, 0)); }

int num_threads() {
  int n = g_requested_threads.load();
  return n > 0 ? n : hardware_threads();
}

}  // namespace tessera::runtime
