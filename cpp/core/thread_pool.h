// A fixed pool of worker threads owned by a context. parallel_for may be called from many caller
// threads at once (concurrent searches share the pool); each caller also works on its own job, so a
// call always makes progress even when every worker is busy with other callers' jobs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace quiver {

class ThreadPool {
 public:
  // threads: the parallelism of one parallel_for, the calling thread included (>= 1).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(i) for every i in [0, count), in any order and on any threads, and returns when all
  // are done. The first exception thrown by a task is rethrown here (remaining tasks are skipped).
  void parallel_for(int64_t count, const std::function<void(int64_t)>& task);

 private:
  struct Job;
  void worker_loop();
  static void run_tasks(Job& job);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stopping_ = false;
};

}  // namespace quiver
