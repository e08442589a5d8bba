// gpu.h's IdTable: an index's row -> id table in device memory, so that results written to device
// memory get their ids where they are (no round trip through the host).
#include <algorithm>
#include <memory>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "cuda/ivf/device_buffer.h"

namespace quiver::gpu {

class IdTable {
 public:
  IdTable(DevicePool& pool, int64_t count) : ids(pool, count), count(count) {}

  DeviceBuffer<int64_t> ids;
  int64_t count;
};

namespace {

constexpr int kThreads = 256;
constexpr int64_t kBlocksPerSm = 8;

// rows[i] = table[rows[i]]; rows outside the table (-1: no result) become -1.
__global__ void rows_to_ids_kernel(const int64_t* __restrict__ table, int64_t table_count, int64_t n,
                                   int64_t* __restrict__ rows) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = rows[i];
    rows[i] = row >= 0 && row < table_count ? table[row] : -1;
  }
}

}  // namespace

IdTable* id_table_create(Resources& resources, int64_t n, const int64_t* ids) {
  require(n >= 0, "n = ", n, " is negative");
  require(n == 0 || ids != nullptr, "ids must not be null");
  Session session(resources);
  auto table = std::make_unique<IdTable>(resources.pool(), n);
  copy_to_device(resources.staging(), resources.device(), table->ids.get(), ids, size_t(n) * sizeof(int64_t),
                 resources.stream(0));
  session.finish();
  return table.release();
}

void id_table_free(IdTable* table) noexcept { delete table; }

int64_t id_table_bytes(const IdTable& table) { return table.count * int64_t(sizeof(int64_t)); }

void rows_to_ids(Resources& resources, const IdTable& table, int64_t n, int64_t* rows) {
  require(n >= 0, "n = ", n, " is negative");
  if (n == 0) return;
  require(rows != nullptr, "rows must not be null");
  Session session(resources);
  const int device = resources.device();
  cudaStream_t stream = resources.stream(0);
  // Rows elsewhere (host, another device) are translated in a copy on this device.
  const bool here = memory_kind(rows, device) == MemoryKind::device;
  PoolBuffer<int64_t> copy;
  int64_t* target = rows;
  if (!here) {
    copy = PoolBuffer<int64_t>(resources.pool(), n);
    target = copy.get();
    copy_to_device(resources.staging(), device, target, rows, size_t(n) * sizeof(int64_t), stream);
  }
  const int64_t blocks = std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1,
                                             int64_t(resources.limits().sm_count) * kBlocksPerSm);
  rows_to_ids_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(table.ids.get(), table.count, n, target);
  QV_LAUNCH_CHECK("rows_to_ids_kernel");
  if (!here) copy_from_device(resources.staging(), device, rows, target, size_t(n) * sizeof(int64_t), stream);
  session.finish();
}

}  // namespace quiver::gpu
