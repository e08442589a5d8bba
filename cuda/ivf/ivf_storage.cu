// gpu_ivf.h: adding, appending and removing entries of the inverted lists (ivf_device.h describes
// the arena). Every change is all or nothing: device memory is allocated and the device work done
// before the host bookkeeping changes, and slots written beyond a list's size are invisible until
// its size is updated.
#include <algorithm>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/kernels.h"
#include "cuda/ivf/coarse.h"
#include "cuda/ivf/ivf_device.h"
#include "cuda/ivf/ivf_kernels.h"
#include "cuda/ivf/ivf_storage.h"
#include "cuda/ivf_pq/pq_encode.h"
#include "cuda/ivf_pq/pq_tables.h"

namespace quiver::gpu {

namespace {

// A list that overflows grows by half (at least what it needs, at least kMinListCapacity slots),
// rounded up to whole kSlotRound slots. When the arena is rebuilt for a later add, every list also
// gets room for half its size again: streamed adds spread over many lists, and growing only the
// lists that overflowed would rebuild the whole arena on nearly every add (O(index) each); with
// headroom everywhere the arena is rebuilt O(log n) times. The first fill is tight.
constexpr int64_t kGrowNumerator = 3;
constexpr int64_t kGrowDenominator = 2;
constexpr int64_t kMinListCapacity = 16;
constexpr int64_t kSlotRound = 16;

struct Layout {
  std::vector<int64_t> offset, capacity;
  int64_t total = 0;
};

int64_t round_slots(int64_t slots) { return (slots + kSlotRound - 1) / kSlotRound * kSlotRound; }

// The layout that gives every list room for extra[l] more entries (and, with headroom, every list
// room to grow by half); false when the current one has room already. The total may pass kMaxSlots:
// place() then falls back to the tight layout, and fails only when that does not fit either.
bool plan_growth(const IvfDevice& ivf, const std::vector<int64_t>& extra, bool headroom, Layout* out) {
  bool grown = false;
  for (size_t l = 0; l < size_t(ivf.nlist) && !grown; ++l) grown = ivf.size[l] + extra[l] > ivf.capacity[l];
  if (!grown) return false;
  out->offset.resize(size_t(ivf.nlist));
  out->capacity.resize(size_t(ivf.nlist));
  int64_t total = 0;
  for (size_t l = 0; l < size_t(ivf.nlist); ++l) {
    const int64_t need = ivf.size[l] + extra[l];
    int64_t cap = ivf.capacity[l];
    if (need > cap) cap = round_slots(std::max({need, cap * kGrowNumerator / kGrowDenominator, kMinListCapacity}));
    if (headroom && need > 0) cap = std::max(cap, round_slots(need * kGrowNumerator / kGrowDenominator));
    out->offset[l] = total;
    out->capacity[l] = cap;
    total += cap;
  }
  out->total = total;
  return true;
}

void check_slots(const Layout& layout) {
  if (layout.total > kMaxSlots)
    fail(Status::unsupported, "the GPU inverted lists hold at most ", kMaxSlots, " slots (", layout.total,
         " needed)");
}

IvfArena allocate_arena(Resources& resources, const IvfDevice& ivf, int64_t capacity) {
  IvfArena arena;
  DevicePool& pool = resources.pool();
  arena.capacity = capacity;
  arena.codes = DeviceBuffer<uint8_t>(pool, capacity * ivf.code_stride);
  // Rows padded to code_stride: the padding is never written, but rebuilds gather and list reads
  // copy whole rows, so it is zeroed once here (no read of uninitialised memory, compute-sanitizer's
  // initcheck clean).
  if (ivf.code_stride != ivf.code_bytes && capacity > 0)
    QV_CUDA_CHECK(cudaMemsetAsync(arena.codes.get(), 0, size_t(capacity * ivf.code_stride), resources.stream(0)));
  if (ivf.keep_raw && !ivf.raw_in_codes) arena.raw = DeviceBuffer<float>(pool, capacity * ivf.dim);
  if (ivf.l2()) arena.norms = DeviceBuffer<float>(pool, capacity);
  if (!ivf.ids_on_host) arena.ids = DeviceBuffer<int64_t>(pool, capacity);
  // Slots beyond a list's size hold id -1 (all bits set): filters read every slot's id.
  if (!ivf.ids_on_host && capacity > 0)
    QV_CUDA_CHECK(cudaMemsetAsync(arena.ids.get(), 0xff, size_t(capacity) * sizeof(int64_t), resources.stream(0)));
  return arena;
}

// New slot s of `to` receives old slot src[s] of `from` (src[s] < 0: none).
void move_entries(Resources& resources, const IvfDevice& ivf, const IvfArena& from, IvfArena& to,
                  const std::vector<int32_t>& src, PoolBuffer<int32_t>& src_dev) {
  if (from.capacity == 0 || src.empty()) return;
  cudaStream_t stream = resources.stream(0);
  const int64_t n = int64_t(src.size());
  src_dev = PoolBuffer<int32_t>(resources.pool(), n);
  copy_to_device(resources.staging(), resources.device(), src_dev.get(), src.data(), size_t(n) * 4, stream);
  auto words = [](const void* p) { return static_cast<const uint32_t*>(p); };
  auto out = [](void* p) { return static_cast<uint32_t*>(p); };
  launch_gather_words(words(from.codes.get()), ivf.code_stride / 4, src_dev.get(), n, out(to.codes.get()), stream);
  if (from.raw.get() != nullptr)
    launch_gather_words(words(from.raw.get()), ivf.dim, src_dev.get(), n, out(to.raw.get()), stream);
  if (from.norms.get() != nullptr)
    launch_gather_words(words(from.norms.get()), 1, src_dev.get(), n, out(to.norms.get()), stream);
  if (from.ids.get() != nullptr)
    launch_gather_words(words(from.ids.get()), 2, src_dev.get(), n, out(to.ids.get()), stream);
}

// The source map and host ids of a rebuilt arena that keeps each list's entries in order: keep(l)
// lists the positions (within list l) that survive.
template <typename Keep>
void remap(const IvfDevice& ivf, const Layout& layout, Keep keep, std::vector<int32_t>* src,
           std::vector<int64_t>* host_ids, std::vector<int64_t>* sizes) {
  src->assign(size_t(layout.total), -1);
  host_ids->assign(size_t(layout.total), -1);
  sizes->assign(size_t(ivf.nlist), 0);
  for (size_t l = 0; l < size_t(ivf.nlist); ++l) {
    int64_t j = 0;
    for (int64_t e = 0; e < ivf.size[l]; ++e) {
      const int64_t old_slot = ivf.offset[l] + e;
      if (!keep(old_slot)) continue;
      const int64_t new_slot = layout.offset[l] + j++;
      (*src)[size_t(new_slot)] = static_cast<int32_t>(old_slot);
      (*host_ids)[size_t(new_slot)] = ivf.host_ids[size_t(old_slot)];
    }
    (*sizes)[l] = j;
  }
}

void upload_meta(IvfDevice& ivf, const std::vector<int64_t>& offset, const std::vector<int64_t>& size) {
  std::vector<int32_t> o(offset.begin(), offset.end()), s(size.begin(), size.end());
  QV_CUDA_CHECK(cudaMemcpy(ivf.offset_dev.get(), o.data(), o.size() * 4, cudaMemcpyHostToDevice));
  QV_CUDA_CHECK(cudaMemcpy(ivf.size_dev.get(), s.data(), s.size() * 4, cudaMemcpyHostToDevice));
}

// Makes the new host state current, device list metadata first (restored if its upload fails).
void commit(IvfDevice& ivf, const std::vector<int64_t>& offset, const std::vector<int64_t>& capacity,
            const std::vector<int64_t>& size) {
  try {
    upload_meta(ivf, offset, size);
  } catch (...) {
    try {
      upload_meta(ivf, ivf.offset, ivf.size);
    } catch (...) {
    }
    throw;
  }
  ivf.offset = offset;
  ivf.capacity = capacity;
  ivf.size = size;
  int64_t count = 0;
  for (int64_t s : size) count += s;
  ivf.count = count;
  std::vector<int64_t> sorted(size);
  std::sort(sorted.begin(), sorted.end(), std::greater<int64_t>());
  ivf.top_sizes.assign(sorted.size() + 1, 0);
  for (size_t i = 0; i < sorted.size(); ++i) ivf.top_sizes[i + 1] = ivf.top_sizes[i] + sorted[i];
}

// Where the entries will go: grows the arena when needed (new_arena, host ids and the move done
// on the device), else leaves new_arena empty.
struct Placement {
  Layout layout;
  bool grown = false;
  IvfArena new_arena;
  std::vector<int64_t> host_ids;  // grown: the new arena's
  PoolBuffer<int32_t> src_dev;
};

void place(Resources& resources, const IvfDevice& ivf, const std::vector<int64_t>& extra, Placement* p) {
  // Headroom on rebuilds of a filled arena; where that does not fit in device memory, the tight layout.
  // The same where the headroom would pass the slot limit.
  bool headroom = ivf.count > 0;
  p->grown = plan_growth(ivf, extra, headroom, &p->layout);
  if (!p->grown) {
    p->layout.offset = ivf.offset;
    p->layout.capacity = ivf.capacity;
    p->layout.total = ivf.arena.capacity;
    return;
  }
  if (headroom && p->layout.total > kMaxSlots) {
    headroom = false;
    plan_growth(ivf, extra, false, &p->layout);
  }
  check_slots(p->layout);
  try {
    p->new_arena = allocate_arena(resources, ivf, p->layout.total);
  } catch (const Error& e) {
    if (!headroom || e.status() != Status::out_of_device_memory) throw;
    plan_growth(ivf, extra, false, &p->layout);
    p->new_arena = allocate_arena(resources, ivf, p->layout.total);
  }
  std::vector<int32_t> src;
  std::vector<int64_t> sizes;
  remap(ivf, p->layout, [](int64_t) { return true; }, &src, &p->host_ids, &sizes);
  move_entries(resources, ivf, ivf.arena, p->new_arena, src, p->src_dev);
}

void check_ids_fit(const IvfDevice& ivf, int64_t n) {
  if (ivf.count + n > kMaxSlots)
    fail(Status::unsupported, "the GPU inverted lists hold at most ", kMaxSlots, " entries");
}

}  // namespace

void ivf_add(Resources& resources, IvfDevice& ivf, int64_t n, const float* x, const int64_t* ids,
             int64_t* lists_out) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_ivf_device(resources, ivf);
  require(n >= 0, "n = ", n, " is negative");
  require(n == 0 || (x != nullptr && ids != nullptr), "x and ids must not be null");
  if (n == 0) return;
  check_ids_fit(ivf, n);

  Session session(resources);
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t stream = resources.stream(0);
  const int64_t dim = ivf.dim;
  const bool x_on_device = memory_kind(x, device) == MemoryKind::device;

  // Batches bounded by the distance tile of the coarse assignment and the vectors' copies.
  const int64_t row_bytes = (coarse_tile_floats(ivf, 1) + dim * (ivf.rotated ? 2 : 1) + 2) * int64_t(sizeof(float));
  const int64_t batch = std::clamp<int64_t>(resources.tile_bytes() / row_bytes, 1, n);
  const bool one_batch = batch >= n;

  PoolBuffer<float> x_copy, x_rotated, tile, keys, norms;
  if (!x_on_device) x_copy = PoolBuffer<float>(pool, batch * dim);
  if (ivf.rotated) x_rotated = PoolBuffer<float>(pool, batch * dim);
  tile = PoolBuffer<float>(pool, coarse_tile_floats(ivf, batch));
  PoolBuffer<char> workspace(pool, coarse_workspace_bytes(resources, ivf, batch, 1));
  keys = PoolBuffer<float>(pool, batch);
  if (ivf.flat() && ivf.l2()) norms = PoolBuffer<float>(pool, batch);
  PoolBuffer<int32_t> assign_dev(pool, n);
  PoolBuffer<int32_t> dest_dev(pool, n);
  PoolBuffer<int64_t> ids_dev;
  if (!ivf.ids_on_host) ids_dev = PoolBuffer<int64_t>(pool, n);

  // The batch's vectors (caller space) and their rotated form, on the device.
  auto prepare = [&](int64_t b0, int64_t rows, const float** xd, const float** xq) {
    *xd = x + b0 * dim;
    if (!x_on_device) {
      copy_to_device(staging, device, x_copy.get(), x + b0 * dim, size_t(rows * dim) * sizeof(float), stream);
      *xd = x_copy.get();
    }
    *xq = *xd;
    if (ivf.rotated) {
      rotate_rows(resources.blas(0), ivf.rotation.get(), dim, *xd, rows, x_rotated.get());
      *xq = x_rotated.get();
    }
  };

  // ---- pass 1: the nearest list of every vector ----
  const float* xd = nullptr;
  const float* xq = nullptr;
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t rows = std::min(batch, n - b0);
    prepare(b0, rows, &xd, &xq);
    coarse_search(resources, 0, ivf, rows, xq, 1, tile.get(), workspace.get(), keys.get(), assign_dev.get() + b0);
  }
  std::vector<int32_t> assign(static_cast<size_t>(n));
  copy_from_device(staging, device, assign.data(), assign_dev.get(), size_t(n) * 4, stream);

  // ---- placement: each vector's slot, after the entries already in its list ----
  std::vector<int64_t> extra(size_t(ivf.nlist), 0);
  for (int32_t l : assign) ++extra[size_t(l)];
  Placement placement;
  place(resources, ivf, extra, &placement);
  IvfArena& arena = placement.grown ? placement.new_arena : ivf.arena;
  std::vector<int64_t> cursor(ivf.size);
  std::vector<int32_t> dest(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const size_t l = size_t(assign[size_t(i)]);
    dest[size_t(i)] = static_cast<int32_t>(placement.layout.offset[l] + cursor[l]++);
  }
  copy_to_device(staging, device, dest_dev.get(), dest.data(), size_t(n) * 4, stream);
  if (!ivf.ids_on_host) {
    copy_to_device(staging, device, ids_dev.get(), ids, size_t(n) * sizeof(int64_t), stream);
    launch_scatter_words(reinterpret_cast<const uint32_t*>(ids_dev.get()), 2, dest_dev.get(), n,
                         reinterpret_cast<uint32_t*>(arena.ids.get()), stream);
  }

  // ---- pass 2: encode into the slots ----
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t rows = std::min(batch, n - b0);
    if (!one_batch) prepare(b0, rows, &xd, &xq);
    const int32_t* d = dest_dev.get() + b0;
    if (ivf.flat()) {
      launch_scatter_words(reinterpret_cast<const uint32_t*>(xq), dim, d, rows,
                           reinterpret_cast<uint32_t*>(arena.codes.get()), stream);
      if (ivf.l2()) {
        launch_row_norms(xq, rows, dim, norms.get(), stream);
        launch_scatter_words(reinterpret_cast<const uint32_t*>(norms.get()), 1, d, rows,
                             reinterpret_cast<uint32_t*>(arena.norms.get()), stream);
      }
    } else {
      launch_pq_encode(xq, assign_dev.get() + b0, d, rows, ivf.centroids.get(), ivf.codebooks.get(), ivf.pq_m,
                       ivf.dsub, ivf.code_stride, arena.codes.get(), resources.limits().max_shared_bytes, stream);
      if (ivf.l2())
        launch_pq_entry_terms(arena.codes.get(), ivf.code_stride, d, 0, assign_dev.get() + b0, 0, rows,
                              ivf.centroids.get(), ivf.codebooks.get(), ivf.pq_m, ivf.dsub, arena.norms.get(), stream);
    }
    if (ivf.keep_raw && !ivf.raw_in_codes)
      launch_scatter_words(reinterpret_cast<const uint32_t*>(xd), dim, d, rows,
                           reinterpret_cast<uint32_t*>(arena.raw.get()), stream);
  }
  session.finish();

  // ---- commit ----
  std::vector<int64_t> sizes(cursor);
  if (placement.grown) {
    for (int64_t i = 0; i < n; ++i) placement.host_ids[size_t(dest[size_t(i)])] = ids[i];
    commit(ivf, placement.layout.offset, placement.layout.capacity, sizes);
    ivf.arena = std::move(placement.new_arena);
    ivf.host_ids = std::move(placement.host_ids);
  } else {
    commit(ivf, placement.layout.offset, placement.layout.capacity, sizes);
    for (int64_t i = 0; i < n; ++i) ivf.host_ids[size_t(dest[size_t(i)])] = ids[i];
  }
  if (lists_out != nullptr)
    for (int64_t i = 0; i < n; ++i) lists_out[i] = assign[size_t(i)];
}

void ivf_append_encoded(Resources& resources, IvfDevice& ivf, int64_t list, int64_t n, const uint8_t* codes,
                        const float* raw, const int64_t* ids) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_ivf_device(resources, ivf);
  require(list >= 0 && list < ivf.nlist, "list = ", list, " is outside 0 .. ", ivf.nlist - 1);
  require(n >= 0, "n = ", n, " is negative");
  require(n == 0 || (codes != nullptr && ids != nullptr), "codes and ids must not be null");
  require(n == 0 || !ivf.keep_raw || raw != nullptr, "raw must not be null: the index keeps raw vectors");
  if (n == 0) return;
  check_ids_fit(ivf, n);

  Session session(resources);
  const int device = resources.device();
  HostStaging& staging = resources.staging();
  cudaStream_t stream = resources.stream(0);
  std::vector<int64_t> extra(size_t(ivf.nlist), 0);
  extra[size_t(list)] = n;
  Placement placement;
  place(resources, ivf, extra, &placement);
  IvfArena& arena = placement.grown ? placement.new_arena : ivf.arena;
  const int64_t first = placement.layout.offset[size_t(list)] + ivf.size[size_t(list)];  // slots first .. first + n

  uint8_t* code_dst = arena.codes.get() + first * ivf.code_stride;
  if (ivf.code_stride == ivf.code_bytes) {
    copy_to_device(staging, device, code_dst, codes, size_t(n * ivf.code_bytes), stream);
  } else {
    std::vector<uint8_t> strided(size_t(n * ivf.code_stride), 0);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(strided.data() + i * ivf.code_stride, codes + i * ivf.code_bytes, size_t(ivf.code_bytes));
    copy_to_device(staging, device, code_dst, strided.data(), strided.size(), stream);
  }
  if (ivf.flat() && ivf.l2())
    launch_row_norms(reinterpret_cast<const float*>(code_dst), n, ivf.dim, arena.norms.get() + first, stream);
  if (!ivf.flat() && ivf.l2())
    launch_pq_entry_terms(arena.codes.get(), ivf.code_stride, nullptr, first, nullptr, static_cast<int32_t>(list), n,
                          ivf.centroids.get(), ivf.codebooks.get(), ivf.pq_m, ivf.dsub, arena.norms.get(), stream);
  if (ivf.keep_raw && !ivf.raw_in_codes)
    copy_to_device(staging, device, arena.raw.get() + first * ivf.dim, raw, size_t(n * ivf.dim) * sizeof(float),
                   stream);
  if (!ivf.ids_on_host)
    copy_to_device(staging, device, arena.ids.get() + first, ids, size_t(n) * sizeof(int64_t), stream);
  session.finish();

  std::vector<int64_t> sizes(ivf.size);
  sizes[size_t(list)] += n;
  if (placement.grown) {
    std::copy_n(ids, n, placement.host_ids.begin() + first);
    commit(ivf, placement.layout.offset, placement.layout.capacity, sizes);
    ivf.arena = std::move(placement.new_arena);
    ivf.host_ids = std::move(placement.host_ids);
  } else {
    commit(ivf, placement.layout.offset, placement.layout.capacity, sizes);
    std::copy_n(ids, n, ivf.host_ids.begin() + first);
  }
}

int64_t ivf_remove(Resources& resources, IvfDevice& ivf, int64_t n, const int64_t* ids) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_ivf_device(resources, ivf);
  require(n >= 0, "n = ", n, " is negative");
  require(n == 0 || ids != nullptr, "ids is null");
  if (n == 0 || ivf.count == 0) return 0;
  const std::unordered_set<int64_t> gone(ids, ids + n);
  auto keep = [&](int64_t slot) { return gone.count(ivf.host_ids[size_t(slot)]) == 0; };
  int64_t removed = 0;
  for (size_t l = 0; l < size_t(ivf.nlist); ++l)
    for (int64_t e = 0; e < ivf.size[l]; ++e) removed += keep(ivf.offset[l] + e) ? 0 : 1;
  if (removed == 0) return 0;

  // A new arena of the same layout with the survivors moved to the front of their lists.
  Session session(resources);
  Layout layout;
  layout.offset = ivf.offset;
  layout.capacity = ivf.capacity;
  layout.total = ivf.arena.capacity;
  IvfArena fresh = allocate_arena(resources, ivf, layout.total);
  std::vector<int32_t> src;
  std::vector<int64_t> host_ids, sizes;
  remap(ivf, layout, keep, &src, &host_ids, &sizes);
  PoolBuffer<int32_t> src_dev;
  move_entries(resources, ivf, ivf.arena, fresh, src, src_dev);
  session.finish();
  commit(ivf, layout.offset, layout.capacity, sizes);
  ivf.arena = std::move(fresh);
  ivf.host_ids = std::move(host_ids);
  return removed;
}

}  // namespace quiver::gpu
