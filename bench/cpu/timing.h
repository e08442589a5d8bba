// What the single-thread kernel benchmarks in bench/cpu share: the machine, its load, and a median
// time per call. Header-only: the benchmarks are built by hand (see each one's first comment).
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

namespace bench {

constexpr int kSamples = 9;              // odd, for a plain median
constexpr double kSampleSeconds = 0.15;  // long enough to hide timer and frequency ramp noise

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// Median seconds per call of f.
template <typename F>
double time_call(F&& f) {
  f();  // warm caches and the scratch
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  f();
  const double once = std::chrono::duration<double>(now() - t0).count();
  const int reps = std::max(1, static_cast<int>(kSampleSeconds / std::max(once, 1e-7)));
  std::vector<double> samples;
  for (int s = 0; s < kSamples; ++s) {
    t0 = now();
    for (int r = 0; r < reps; ++r) f();
    samples.push_back(std::chrono::duration<double>(now() - t0).count() / reps);
  }
  std::nth_element(samples.begin(), samples.begin() + kSamples / 2, samples.end());
  return samples[kSamples / 2];
}

}  // namespace bench
