// A one-line progress indicator on stderr, redrawn in place; silent when stderr is not a terminal so
// logs and pipes stay clean. Thread-safe: workers may report concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

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

}  // namespace qvtool
