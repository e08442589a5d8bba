#include "cpp/core/thread_pool.h"

#include <atomic>
#include <exception>

namespace quiver {

struct ThreadPool::Job {
  const std::function<void(int64_t)>* task;
  int64_t count;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> finished{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by the thread that set failed
  std::mutex done_mutex;
  std::condition_variable done;
};

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = 1;
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_tasks(Job& job) {
  for (;;) {
    const int64_t i = job.next.fetch_add(1);
    if (i >= job.count) return;
    if (!job.failed.load(std::memory_order_relaxed)) {
      try {
        (*job.task)(i);
      } catch (...) {
        if (!job.failed.exchange(true)) job.error = std::current_exception();
      }
    }
    if (job.finished.fetch_add(1) + 1 == job.count) {
      std::lock_guard<std::mutex> lock(job.done_mutex);
      job.done.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = jobs_.front();
      // A job whose tasks are all claimed needs no more workers.
      if (job->next.load() >= job->count) {
        jobs_.pop_front();
        continue;
      }
    }
    run_tasks(*job);
  }
}

void ThreadPool::parallel_for(int64_t count, const std::function<void(int64_t)>& task) {
  if (count <= 0) return;
  if (count == 1 || workers_.empty()) {
    for (int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->task = &task;
  job->count = count;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(job);
  }
  wake_.notify_all();
  run_tasks(*job);
  {
    std::unique_lock<std::mutex> lock(job->done_mutex);
    job->done.wait(lock, [&] { return job->finished.load() == job->count; });
  }
  {
    // Remove it if no worker did (workers only drop fully claimed jobs at the front).
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (*it == job) {
        jobs_.erase(it);
        break;
      }
    }
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace quiver
