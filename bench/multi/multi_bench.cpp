// Multi-GPU benchmark (issue: replicated and sharded indexes): through the C API, on 1, 2, 4 ...
// devices of this machine,
//   - replication: QPS of "Replicated,<kind>" on D devices against the plain <kind> on one device
//     (targets: >= 1.9x on 2, >= 3.7x on 4, for Flat and IVF-Flat);
//   - sharding: "Sharded,<kind>" on D devices at k = 100, and the merge overhead: its time against
//     the time one device takes for one shard's worth of data (target: <= 10%).
// Times are wall-clock medians of warm repeats of a blocking host-to-host search (the call returns
// when results are in host memory). Data: synthetic clustered vectors, made here. With --pinned 1
// the queries and results are page-locked (cudaHostRegister), so the library moves them by DMA
// instead of through its pinned staging buffers and the host's memcpy.
//
// usage: multi_bench [--n N] [--dim D] [--nq Q] [--max-devices G] [--nprobe P] [--repeats R]
//                    [--only flat|ivf] [--pinned 0|1]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/multi/capi_checks.h"
#include "quiver/quiver.h"

namespace {

using bench::check;
using bench::device_gib;

struct Options {
  int64_t n = 1000000, dim = 128, nq = 10000, nprobe = 32;
  int32_t max_devices = 0;  // 0: every visible device
  int repeats = 7;
  std::string only;  // "flat" or "ivf": one kind only
  bool pinned = false;
};

// Page-locks a host buffer for its lifetime when asked (--pinned).
class PinnedWhile {
 public:
  PinnedWhile(const void* p, size_t bytes, bool on) : p_(on && bytes > 0 ? const_cast<void*>(p) : nullptr) {
    if (p_ != nullptr && cudaHostRegister(p_, bytes, cudaHostRegisterDefault) != cudaSuccess) {
      std::fprintf(stderr, "multi_bench: cudaHostRegister of %zu bytes failed\n", bytes);
      std::exit(1);
    }
  }
  ~PinnedWhile() {
    if (p_ != nullptr) cudaHostUnregister(p_);
  }
  PinnedWhile(const PinnedWhile&) = delete;
  PinnedWhile& operator=(const PinnedWhile&) = delete;

 private:
  void* p_;
};

// Clustered data: 1000 centres in [-1, 1]^dim, points within 0.3 of theirs (xorshift, fast to make).
std::vector<float> clustered(int64_t n, int64_t dim, uint64_t seed) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto uniform = [&state]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<float>((state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
  };
  std::vector<float> centres(static_cast<size_t>(1000 * dim));
  for (float& c : centres) c = uniform();
  state ^= seed * 0xD1B54A32D192ED03ull;
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    const float* centre = &centres[static_cast<size_t>((uniform() * 0.5f + 0.5f) * 999.0f) * dim];
    for (int64_t j = 0; j < dim; ++j) x[i * dim + j] = centre[j] + 0.3f * uniform();
  }
  return x;
}

qv_context_t* devices_context(int32_t devices) {
  qv_context_options_t options;
  check(qv_context_options_init(&options), "options");
  options.device = QV_DEVICE_CUDA;
  options.device_count = devices;
  for (int32_t d = 0; d < devices; ++d) options.device_ids[d] = d;
  qv_context_t* context = nullptr;
  check(qv_context_create(&options, &context), "qv_context_create");
  return context;
}

double median_seconds(int repeats, const std::function<void()>& call) {
  call();  // warm: pools, staging buffers, cuBLAS
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct Built {
  qv_index_t* index = nullptr;
  double build_seconds = 0;
};

Built build(qv_context_t* context, const std::string& descriptor, const Options& o, const std::vector<float>& base,
            int64_t n) {
  Built built;
  const auto t0 = std::chrono::steady_clock::now();
  check(qv_index_create(context, descriptor.c_str(), o.dim, QV_METRIC_L2, &built.index), descriptor.c_str());
  const int64_t sample = std::min<int64_t>(n, 100000);
  check(qv_index_train(built.index, sample, base.data()), "train");
  check(qv_index_add(built.index, n, base.data(), nullptr), "add");
  built.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return built;
}

struct Timed {
  double seconds = 0;
  std::vector<int64_t> ids;
};

// Queries [first, first + nq) (nq 0: all of them).
Timed time_search(const qv_index_t* index, const Options& o, const std::vector<float>& queries, uint32_t k,
                  int64_t nq = 0, int64_t first = 0) {
  if (nq == 0) nq = o.nq;
  qv_search_params_t params;
  check(qv_search_params_init(&params), "params");
  params.nprobe = static_cast<uint32_t>(o.nprobe);
  Timed timed;
  std::vector<float> distances(static_cast<size_t>(nq * k));
  timed.ids.resize(distances.size());
  const PinnedWhile pin_distances(distances.data(), distances.size() * sizeof(float), o.pinned);
  const PinnedWhile pin_ids(timed.ids.data(), timed.ids.size() * sizeof(int64_t), o.pinned);
  timed.seconds = median_seconds(o.repeats, [&] {
    check(qv_index_search(index, nq, queries.data() + first * o.dim, k, &params, distances.data(), timed.ids.data()), "search");
  });
  return timed;
}

// Slice d of a batch of nq queries cut into D nearly equal slices, as "Replicated" cuts it.
struct Slice {
  int64_t begin, count;
};
Slice slice_of(int64_t nq, int32_t d, int32_t devices) {
  const int64_t begin = d * nq / devices;
  return Slice{begin, (d + 1) * nq / devices - begin};
}

struct SideBySide {
  double together = 0;       // seconds, every device's search at once
  double slowest_alone = 0;  // seconds, the slowest device's search with the others idle
};

// D plain indexes, one per device, searched at once from D threads: what the devices and the host
// manage side by side without the composite kinds; and each device's search alone, to tell the
// devices' own speeds from what they lose running together. Sharding (replicas false): each holds
// one shard's data and searches every query at k = 100. Replication: each holds all the data and
// searches its slice of the queries at k = 10.
SideBySide side_by_side(const Options& o, const std::vector<float>& base, const std::vector<float>& queries,
                        int32_t devices, const std::string& kind, bool replicas) {
  const uint32_t k = replicas ? 10 : 100;
  std::vector<qv_context_t*> contexts;
  std::vector<qv_index_t*> shards;
  for (int32_t d = 0; d < devices; ++d) {
    qv_context_options_t options;
    check(qv_context_options_init(&options), "options");
    options.device = QV_DEVICE_CUDA;
    options.device_id = d;
    qv_context_t* context = nullptr;
    check(qv_context_create(&options, &context), "qv_context_create");
    contexts.push_back(context);
    shards.push_back(build(context, kind, o, base, replicas ? o.n : o.n / devices).index);
  }
  qv_search_params_t params;
  check(qv_search_params_init(&params), "params");
  params.nprobe = static_cast<uint32_t>(o.nprobe);
  std::vector<std::vector<float>> distances(devices, std::vector<float>(static_cast<size_t>(o.nq * k)));
  std::vector<std::vector<int64_t>> ids(devices, std::vector<int64_t>(static_cast<size_t>(o.nq * k)));
  std::vector<std::unique_ptr<PinnedWhile>> pins;
  for (int32_t d = 0; d < devices; ++d) {
    pins.push_back(std::make_unique<PinnedWhile>(distances[d].data(), distances[d].size() * sizeof(float), o.pinned));
    pins.push_back(std::make_unique<PinnedWhile>(ids[d].data(), ids[d].size() * sizeof(int64_t), o.pinned));
  }
  auto search_on = [&](int32_t d) {
    const Slice slice = replicas ? slice_of(o.nq, d, devices) : Slice{0, o.nq};
    check(qv_index_search(shards[d], slice.count, queries.data() + slice.begin * o.dim, k, &params,
                          distances[d].data(), ids[d].data()),
          "search");
  };
  SideBySide times;
  for (int32_t d = 0; d < devices; ++d)
    times.slowest_alone = std::max(times.slowest_alone, median_seconds(o.repeats, [&] { search_on(d); }));
  times.together = median_seconds(o.repeats, [&] {
    std::vector<std::thread> threads;
    for (int32_t d = 0; d < devices; ++d) threads.emplace_back(search_on, d);
    for (std::thread& t : threads) t.join();
  });
  for (qv_index_t* shard : shards) qv_index_free(shard);
  for (qv_context_t* context : contexts) qv_context_free(context);
  return times;
}

double overlap(const std::vector<int64_t>& got, const std::vector<int64_t>& want, int64_t nq, int64_t k) {
  int64_t hits = 0;
  for (int64_t q = 0; q < nq; ++q) {
    const std::set<int64_t> row(want.begin() + q * k, want.begin() + (q + 1) * k);
    for (int64_t i = 0; i < k; ++i) hits += row.count(got[q * k + i]);
  }
  return static_cast<double>(hits) / static_cast<double>(nq * k);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--only") {
      o.only = argv[i + 1];
      continue;
    }
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--pinned") o.pinned = value != 0;
    else if (flag == "--n") o.n = value;
    else if (flag == "--dim") o.dim = value;
    else if (flag == "--nq") o.nq = value;
    else if (flag == "--max-devices") o.max_devices = static_cast<int32_t>(value);
    else if (flag == "--nprobe") o.nprobe = value;
    else if (flag == "--repeats") o.repeats = static_cast<int>(value);
    else {
      std::fprintf(stderr, "multi_bench: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  int32_t visible = 0;
  check(qv_cuda_device_count(&visible), "device count");
  if (visible == 0) {
    std::fprintf(stderr, "multi_bench: no CUDA device\n");
    return 1;
  }
  const int32_t most = o.max_devices > 0 ? std::min(o.max_devices, visible) : visible;
  std::vector<int32_t> counts;
  for (int32_t d = 1; d <= most; d *= 2) counts.push_back(d);
  if (counts.back() != most) counts.push_back(most);

  std::printf("multi_bench: %lld x %lld base, %lld queries%s, %d visible GPU(s), repeats %d (median)\n",
              static_cast<long long>(o.n), static_cast<long long>(o.dim), static_cast<long long>(o.nq),
              o.pinned ? " (queries and results page-locked)" : "", visible, o.repeats);
  const std::vector<float> base = clustered(o.n, o.dim, 1), queries = clustered(o.nq, o.dim, 2);
  const PinnedWhile pin_queries(queries.data(), queries.size() * sizeof(float), o.pinned);

  for (const std::string kind : {"Flat", "IVF4096,Flat"}) {
    if (!o.only.empty() && o.only != (kind == "Flat" ? "flat" : "ivf")) continue;
    // Replication at k = 10 against the plain kind on one device.
    std::printf("\n== %s, replication, k = 10%s\n", kind.c_str(), kind == "Flat" ? "" : (", nprobe " + std::to_string(o.nprobe)).c_str());
    std::printf("%-8s %-28s %10s %12s %9s %10s %10s %12s %12s %9s %8s\n", "devices", "descriptor", "ms", "QPS", "vs 1",
                "slice ms", "overhead", "each alone", "side by side", "same ids", "GiB/GPU");
    double single_seconds = 0;
    std::vector<int64_t> single_ids;
    qv_index_t* single_index = nullptr;
    std::vector<qv_context_t*> contexts;
    for (int32_t devices : counts) {
      qv_context_t* context = devices_context(devices);
      const std::string descriptor = devices == 1 ? kind : "Replicated," + kind;
      Built built = build(context, descriptor, o, base, o.n);
      const Timed t = time_search(built.index, o, queries, 10);
      if (devices == 1) {
        single_seconds = t.seconds;
        single_ids = t.ids;
        single_index = built.index;
      }
      // What the first device takes for the slowest replica's slice of the batch, alone: the time
      // replication can reach.
      double slice = 0;
      for (int32_t d = 0; d < devices; ++d) {
        const Slice part = slice_of(o.nq, d, devices);
        slice = std::max(slice, time_search(single_index, o, queries, 10, part.count, part.begin).seconds);
      }
      const SideBySide plain = devices > 1 ? side_by_side(o, base, queries, devices, kind, true) : SideBySide{slice, slice};
      std::printf("%-8d %-28s %10.3f %12.0f %8.2fx %10.3f %9.1f%% %12.3f %12.3f %9.4f %8.2f\n", devices,
                  descriptor.c_str(), t.seconds * 1e3, o.nq / t.seconds, single_seconds / t.seconds, slice * 1e3,
                  (t.seconds / slice - 1) * 100, plain.slowest_alone * 1e3, plain.together * 1e3,
                  overlap(t.ids, single_ids, o.nq, 10), device_gib(built.index) / devices);
      if (devices > 1) qv_index_free(built.index);
      contexts.push_back(context);
    }
    qv_index_free(single_index);
    for (qv_context_t* context : contexts) qv_context_free(context);

    // Sharding at k = 100: time on D devices against one device holding one shard's data.
    std::printf("\n== %s, sharding, k = 100\n", kind.c_str());
    std::printf("%-8s %-28s %10s %12s %14s %10s %12s %12s %9s %8s\n", "devices", "descriptor", "ms", "QPS",
                "one shard ms", "overhead", "each alone", "side by side", "same ids", "GiB/GPU");
    std::vector<int64_t> full_ids;
    for (int32_t devices : counts) {
      qv_context_t* context = devices_context(devices);
      const std::string descriptor = devices == 1 ? kind : "Sharded," + kind;
      Built built = build(context, descriptor, o, base, o.n);
      const Timed t = time_search(built.index, o, queries, 100);
      if (devices == 1) full_ids = t.ids;
      qv_context_t* one = devices_context(1);
      Built shard = build(one, kind, o, base, o.n / devices);
      const Timed part = time_search(shard.index, o, queries, 100);
      const SideBySide plain = side_by_side(o, base, queries, devices, kind, false);
      std::printf("%-8d %-28s %10.3f %12.0f %14.3f %9.1f%% %12.3f %12.3f %9.4f %8.2f\n", devices, descriptor.c_str(),
                  t.seconds * 1e3, o.nq / t.seconds, part.seconds * 1e3, (t.seconds / part.seconds - 1) * 100,
                  plain.slowest_alone * 1e3, plain.together * 1e3, overlap(t.ids, full_ids, o.nq, 100),
                  device_gib(built.index) / devices);
      qv_index_free(shard.index);
      qv_context_free(one);
      qv_index_free(built.index);
      qv_context_free(context);
    }
  }
  return 0;
}
