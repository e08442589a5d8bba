#include "cpp/multi/run_parts.h"

#include <thread>

namespace quiver {

std::vector<std::exception_ptr> run_parts(int64_t parts, const std::function<void(int64_t)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  auto run = [&](int64_t p) {
    try {
      task(p);
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(parts > 0 ? parts - 1 : 0));
  try {
    for (int64_t p = 1; p < parts; ++p) threads.emplace_back(run, p);
  } catch (...) {
    // No thread for the rest: run them here.
    for (int64_t p = static_cast<int64_t>(threads.size()) + 1; p < parts; ++p) run(p);
  }
  if (parts > 0) run(0);
  for (std::thread& thread : threads) thread.join();
  return errors;
}

void run_parts_or_throw(int64_t parts, const std::function<void(int64_t)>& task) {
  for (const std::exception_ptr& error : run_parts(parts, task))
    if (error) std::rethrow_exception(error);
}

}  // namespace quiver
