#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace qvtool {

// Redrawing more often than this only costs terminal bandwidth.
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(fileno(stderr)) == 1),
      start_(std::chrono::steady_clock::now()), last_(start_ - kRedrawInterval) {}

Progress::~Progress() { done(); }

void Progress::update(int64_t done) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < kRedrawInterval && done < total_) return;
  last_ = now;
  draw(done);
}

void Progress::draw(int64_t done) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double pct = total_ > 0 ? 100.0 * double(done) / double(total_) : 100.0;
  // \r returns to column 0 and ESC[K clears what a longer previous line left behind.
  std::fprintf(stderr, "\r\033[K%s: %lld / %lld (%.0f%%) %.1f s", label_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), pct, secs);
  std::fflush(stderr);
}

void Progress::done() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

int draw_fraction(double fraction, void *progress) {
  static_cast<Progress *>(progress)->update(int64_t(fraction * kFractionSteps));
  return 0;
}

// Elapsed time changes slowly; a few redraws a second are plenty.
constexpr auto kTickInterval = std::chrono::milliseconds(250);

Ticker::Ticker(std::string label) : label_(std::move(label)), start_(std::chrono::steady_clock::now()) {
  if (isatty(fileno(stderr)) == 1) thread_ = std::thread([this] { loop(); });
}

Ticker::~Ticker() { done(); }

void Ticker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, kTickInterval, [this] { return stop_; })) {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r\033[K%s: %.1f s", label_.c_str(), secs);
    std::fflush(stderr);
  }
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

void Ticker::done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace qvtool
