// Runs independent jobs on up to `threads` threads (the calling thread included), biggest
// first as given. Used by both tracks: the estimators are independent of each other, and so
// are the IID track's shuffles.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qe::ea::detail {

inline void run_jobs(const std::vector<std::function<void()>>& jobs, unsigned threads,
                     const std::function<void(size_t done, size_t total)>& progress) {
  std::atomic<size_t> next{0}, done{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      try {
        jobs[i]();
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
      const size_t d = done.fetch_add(1) + 1;
      if (progress) progress(d, jobs.size());
    }
  };
  const size_t extra = std::min<size_t>(threads > 0 ? threads - 1 : 0, jobs.size() > 0 ? jobs.size() - 1 : 0);
  std::vector<std::thread> pool;
  pool.reserve(extra);
  for (size_t t = 0; t < extra; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace qe::ea::detail
