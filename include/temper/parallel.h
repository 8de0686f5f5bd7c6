/* A kernel's threads: a small pool whose threads sleep between calls.
 *
 * Header-only C++ for kernels that use more than one thread (`threads: N` or `threads: all` in
 * temper.yaml; the kernel gets the count as temper_args::num_threads). Why a pool of sleeping
 * threads and not OpenMP or a thread per call:
 *   - the judge measures the CPU time a kernel's threads spend outside its calls and rejects a
 *     kernel whose threads work there (work_outside_call, docs/security.md): these threads block
 *     on a condition variable between calls, so they spend none (an OpenMP runtime spins for a
 *     while after each parallel region unless told otherwise);
 *   - starting a thread costs tens of microseconds, waking a sleeping one a few: small calls keep
 *     most of their gain.
 * The calling thread does the first share of the work itself.
 *
 *   temper_parallel::parallel_for(args->num_threads, units, [&](int64_t begin, int64_t end) { ... });
 */
#ifndef TEMPER_PARALLEL_H
#define TEMPER_PARALLEL_H

#include <stdint.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace temper_parallel {

class Pool {
public:
  // One pool per process (a kernel library is loaded once per worker).
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  // Runs task(ctx, t) for t in [0, n): t = 0 on the calling thread, the others on pool threads
  // (started on first use, then kept asleep). Returns when every share is done.
  void run(int n, void (*task)(void*, int), void* ctx) {
    if (n <= 1) {
      task(ctx, 0);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      while (static_cast<int>(m_threads.size()) < n - 1) {
        const int id = static_cast<int>(m_threads.size()) + 1;
        m_threads.emplace_back([this, id] { loop(id); });
      }
      m_task = task;
      m_ctx = ctx;
      m_n = n;
      m_pending = n - 1;
      ++m_generation;
    }
    m_wake.notify_all();
    task(ctx, 0);
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [this] { return m_pending == 0; });
  }

  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_stop = true;
      ++m_generation;
    }
    m_wake.notify_all();
    for (auto& t : m_threads) t.join();
  }

private:
  void loop(int id) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
      m_wake.wait(lock, [&] { return m_generation != seen; });
      seen = m_generation;
      if (m_stop) return;
      if (id >= m_n) continue; // this call uses fewer threads
      void (*task)(void*, int) = m_task;
      void* ctx = m_ctx;
      lock.unlock();
      task(ctx, id);
      lock.lock();
      if (--m_pending == 0) m_done.notify_one();
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_wake, m_done;
  std::vector<std::thread> m_threads;
  void (*m_task)(void*, int) = nullptr;
  void* m_ctx = nullptr;
  int m_n = 0;
  int m_pending = 0;
  uint64_t m_generation = 0;
  bool m_stop = false;
};

// Splits [0, units) into `threads` contiguous shares of nearly equal size (never more shares
// than units) and runs body(begin, end) on each, the caller's share first.
template <typename Body>
void parallel_for(int threads, int64_t units, Body&& body) {
  if (units <= 0) return;
  const int n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, units)));
  if (n == 1) {
    body(int64_t{0}, units);
    return;
  }
  struct Ctx {
    Body* body;
    int64_t units;
    int n;
  } ctx{&body, units, n};
  Pool::instance().run(
      n,
      [](void* p, int t) {
        const Ctx& c = *static_cast<const Ctx*>(p);
        (*c.body)(c.units * t / c.n, c.units * (t + 1) / c.n);
      },
      &ctx);
}

} // namespace temper_parallel

#endif
