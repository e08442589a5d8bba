#include "cpp/multi/run_parts.h"

#include <pthread.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace quiver {

namespace {

// Idle threads kept for later calls, at most this many (more exit after their task).
constexpr size_t kMaxIdleThreads = 64;

// A thread that runs one job at a time, then waits on the idle list for the next.
struct PartThread {
  std::mutex mutex;
  std::condition_variable wake;
  std::function<void()> job;  // set while the thread has work
};

// The process's idle part threads. Never destroyed (threads may still be waiting at exit).
class PartThreads {
 public:
  static PartThreads& instance() {
    static PartThreads* const threads = [] {
      // A child made by fork() has none of its parent's threads: it forgets the idle ones (and makes
      // its own), the list held still across the fork. (The handlers run after this initialisation.)
      pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                     [] {
                       instance().idle_.clear();
                       instance().mutex_.unlock();
                     });
      return new PartThreads;
    }();
    return *threads;
  }

  // Runs job on an idle thread, or a new one; throws std::system_error if no thread can be made.
  void start(std::function<void()> job) {
    PartThread* thread = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        thread = idle_.back();
        idle_.pop_back();
      }
    }
    if (thread == nullptr) {
      auto made = std::make_unique<PartThread>();
      made->job = std::move(job);
      std::thread(&PartThreads::loop, this, made.get()).detach();
      made.release();  // the thread owns it now
      return;
    }
    {
      std::lock_guard<std::mutex> lock(thread->mutex);
      thread->job = std::move(job);
    }
    thread->wake.notify_one();
  }

 private:
  void loop(PartThread* thread) {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(thread->mutex);
        thread->wake.wait(lock, [thread] { return static_cast<bool>(thread->job); });
        job = std::move(thread->job);
        thread->job = nullptr;
      }
      job();
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_.size() >= kMaxIdleThreads) break;
      idle_.push_back(thread);
    }
    delete thread;
  }

  std::mutex mutex_;
  std::vector<PartThread*> idle_;
};

// Counts the parts still running; the caller waits for zero.
class Latch {
 public:
  explicit Latch(int64_t count) : count_(count) {}
  void count_down() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--count_ == 0) done_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return count_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  int64_t count_;
};

}  // namespace

std::vector<std::exception_ptr> run_parts(int64_t parts, const std::function<void(int64_t)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  auto run = [&](int64_t p) {
    try {
      task(p);
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  if (parts <= 0) return errors;
  Latch others(parts - 1);
  int64_t started = 1;
  try {
    for (; started < parts; ++started) {
      const int64_t p = started;
      PartThreads::instance().start([&run, &others, p] {
        run(p);
        others.count_down();
      });
    }
  } catch (...) {
    // No thread for the rest: run them here.
    for (int64_t p = started; p < parts; ++p) {
      run(p);
      others.count_down();
    }
  }
  run(0);
  others.wait();
  return errors;
}

void run_parts_or_throw(int64_t parts, const std::function<void(int64_t)>& task) {
  for (const std::exception_ptr& error : run_parts(parts, task))
    if (error) std::rethrow_exception(error);
}

}  // namespace quiver
