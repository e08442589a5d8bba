// A one-line progress indicator on stderr, redrawn in place; silent when stderr is not a terminal so
// logs and pipes stay clean. Thread-safe: workers may report concurrently.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace qvtool {

class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  void update(int64_t done);  // redraws at most a few times a second
  void done();                // clears the line; idempotent

 private:
  void draw(int64_t done);

  std::string label_;
  int64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_;
};

// The library's progress reports (qv_progress_fn_t) drawn on a Progress of kFractionSteps steps, the
// user data: thousandths, fine enough for a bar, coarse enough to stay cheap. Never cancels.
constexpr int64_t kFractionSteps = 1000;
int draw_fraction(double fraction, void *progress);

// Elapsed seconds for one long call that reports no progress of its own (training an index): a
// background thread redraws "label: 12.3 s" until done(). Silent when stderr is not a terminal.
class Ticker {
 public:
  explicit Ticker(std::string label);
  ~Ticker();
  Ticker(const Ticker &) = delete;
  Ticker &operator=(const Ticker &) = delete;

  void done();  // stops the thread and clears the line; idempotent

 private:
  void loop();

  std::string label_;
  bool stop_ = false;
  std::mutex mu_;
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;  // last: started once everything it reads is initialised
};

}  // namespace qvtool
