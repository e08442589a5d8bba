#include "cpp/core/input.h"

#include <algorithm>
#include <limits>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"

namespace quiver {

Input prepare_input(const Context& context, const char* what, const float* x, int64_t n,
                    int64_t dim, Metric metric, bool device_ok, int64_t first_row, bool check_later) {
  Input input;
  input.data = x;
  const int64_t row_bytes = std::max<int64_t>(dim, 1) * static_cast<int64_t>(sizeof(float));
  require(n <= std::numeric_limits<int64_t>::max() / row_bytes, what, ": ", n, " rows of ", dim,
          " floats are more bytes than any buffer can hold");
  if (n > 0 && gpu::is_device_pointer(x)) {
    require_device_memory_allowed(context, what);
    if (device_ok && metric != Metric::cosine) {
      input.on_device = true;
      return input;
    }
    input.storage.resize(static_cast<size_t>(n * dim));
    gpu::copy_memory(context.gpu(), input.storage.data(), x, n * dim * static_cast<int64_t>(sizeof(float)));
    input.data = input.storage.data();
  }
  if (check_later && metric != Metric::cosine) {
    input.unchecked = true;
    return input;
  }
  std::vector<float> normalised;
  input.data = prepare_vectors(context.pool(), what, input.data, n, dim, metric, normalised, first_row);
  if (!normalised.empty()) input.storage.swap(normalised);
  return input;
}

const int64_t* prepare_ids(const Context& context, const char* what, const int64_t* ids, int64_t n,
                           std::vector<int64_t>& copy) {
  if (n == 0 || !gpu::is_device_pointer(ids)) return ids;
  require_device_memory_allowed(context, what);
  copy.resize(static_cast<size_t>(n));
  gpu::copy_memory(context.gpu(), copy.data(), ids, n * static_cast<int64_t>(sizeof(int64_t)));
  return copy.data();
}

void require_device_memory_allowed(const Context& context, const char* what) {
  if (context.device() != DeviceKind::cuda)
    fail(Status::invalid_argument, what, " is GPU memory, but the context runs on the CPU");
}

}  // namespace quiver
