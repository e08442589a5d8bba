// Caller vectors and ids, which may be host or device memory (DESIGN.md), made ready for an engine.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/context.h"
#include "cpp/core/metric.h"

namespace quiver {

struct Input {
  const float* data = nullptr;
  bool on_device = false;      // data is device memory of the context's GPU
  bool unchecked = false;      // host rows left for the search to check (check_later)
  std::vector<float> storage;  // owns data when a copy was needed
};

// Host vectors are checked (finite, non-zero for cosine) and, for cosine, normalised; with
// check_later, host vectors of another metric are left unchecked for a search that checks them
// itself (SearchOptions::check_rows). Device memory is accepted on a CUDA context only: an engine
// that reads it there (device_ok) gets it as it is, unchecked; otherwise, or for cosine, it is
// copied to the host first and treated as host data. Errors name rows from first_row (x a slice of
// the caller's array that starts at that row).
Input prepare_input(const Context& context, const char* what, const float* x, int64_t n,
                    int64_t dim, Metric metric, bool device_ok, int64_t first_row = 0, bool check_later = false);

// The caller's n ids readable on the host: ids itself, or (device memory, a CUDA context only) a host
// copy in `copy`.
const int64_t* prepare_ids(const Context& context, const char* what, const int64_t* ids, int64_t n,
                           std::vector<int64_t>& copy);

// Fails with invalid_argument naming `what` unless device memory is accepted: a CUDA context.
void require_device_memory_allowed(const Context& context, const char* what);

}  // namespace quiver
