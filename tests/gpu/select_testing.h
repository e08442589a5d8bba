// Helper of the selection suites: one select_rows call with the workspace it asks for.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/core/resources.h"
#include "cuda/select/select.h"
#include "gpu_testing.h"

namespace quiver::testing {

// Runs `r` on stream 0 and waits; the workspace is the one select_workspace_bytes names (none when
// use_workspace is false: the selection must then do without).
template <typename V>
void run_select(gpu::Resources& resources, const gpu::SelectRequest<V>& r, const gpu::SelectLimits& limits,
                bool use_workspace = true) {
  gpu::Session session(resources);
  const int64_t bytes = gpu::select_workspace_bytes<V>(limits, r.rows, r.cols, r.k);
  DeviceArray<char> workspace(size_t(std::max<int64_t>(bytes, 1)));
  gpu::select_rows(r, limits, bytes > 0 && use_workspace ? workspace.get() : nullptr, resources.stream(0));
  session.finish();
}

}  // namespace quiver::testing
