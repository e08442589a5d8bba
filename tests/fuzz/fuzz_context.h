// The CPU context every fuzz target shares: made once (one thread, so runs are repeatable) and kept
// for the process, as libFuzzer calls the target millions of times.
#pragma once

#include <cstdlib>

#include "quiver/quiver.h"

namespace qvfuzz {

inline qv_context_t* cpu_context() {
  static qv_context_t* context = [] {
    qv_context_options_t options;
    qv_context_options_init(&options);
    options.device = QV_DEVICE_CPU;
    options.cpu_threads = 1;
    qv_context_t* c = nullptr;
    if (qv_context_create(&options, &c) != QV_OK) std::abort();
    return c;
  }();
  return context;
}

}  // namespace qvfuzz
