// Billion-scale IVF-PQ on several GPUs (the multi-GPU issue's Deep1B-style target), through the C
// API: synthetic clustered vectors made on the host in chunks, each chunk added to the index as soon
// as it is made and then dropped (no more than one chunk of float vectors is ever in host memory),
// an IVF-PQ index sharded over every visible GPU, trained on a sample; QPS and recall@1 over an
// nprobe sweep, build time (train + the add calls), device memory. The exact nearest neighbours
// (--gt 1) come from the same chunks: each is also searched exactly (a "Sharded,Flat" index of that
// chunk alone) and the running best kept, so the ground truth never holds more than one chunk.
// Rows are a counter-based hash of (seed, row): any chunk can be made again, on any thread.
//
// usage: billion_bench [--n N] [--dim D] [--index DESCRIPTOR] [--train T] [--chunk C] [--nq Q]
//                      [--nprobe 16,32,64] [--gt 0|1] [--gpus G]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/multi/capi_checks.h"
#include "quiver/quiver.h"

namespace {

using bench::check;
using bench::device_gib;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
float unit(uint64_t h) { return static_cast<float>((h >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

constexpr int64_t kCentres = 10000;

// Rows [first, first + n) of the set (stream 0: base, 1: queries): a centre in [-1, 1]^dim chosen by
// the row's hash, plus uniform noise of +-0.25 per coordinate.
void make_rows(int64_t first, int64_t n, int64_t dim, uint64_t stream, float* out) {
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([=] {
      for (int64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        const uint64_t row = mix(static_cast<uint64_t>(first + i) * 2 + stream);
        const uint64_t centre = row % kCentres;
        for (int64_t j = 0; j < dim; ++j)
          out[i * dim + j] = unit(mix(centre * 131 + static_cast<uint64_t>(j))) +
                             0.25f * unit(mix(row + static_cast<uint64_t>(j) * 0x632BE59BD9B4E019ull));
      }
    });
  for (std::thread& t : pool) t.join();
}

std::vector<int64_t> int_list(const char* text) {
  std::vector<int64_t> out;
  for (const char* p = text; *p;) {
    out.push_back(std::atoll(p));
    p = std::strchr(p, ',');
    if (!p) break;
    ++p;
  }
  return out;
}

qv_context_t* gpus_context(int32_t gpus) {
  qv_context_options_t options;
  check(qv_context_options_init(&options), "options");
  options.device = QV_DEVICE_CUDA;
  if (gpus > 0) {
    options.device_count = gpus;
    for (int32_t d = 0; d < gpus; ++d) options.device_ids[d] = d;
  } else {
    options.device_count = QV_ALL_DEVICES;
  }
  qv_context_t* context = nullptr;
  check(qv_context_create(&options, &context), "context");
  return context;
}

// Exact top-1 of every query over all chunks seen so far, one chunk at a time.
struct Truth {
  explicit Truth(int64_t nq) : dist(static_cast<size_t>(nq), INFINITY), ids(static_cast<size_t>(nq), -1) {}

  std::vector<float> dist;
  std::vector<int64_t> ids;
  double seconds = 0;

  // Searches the chunk of rows [first, first + count) exactly; a nearer row (or an equally near
  // one with a smaller id, which an earlier chunk always has) replaces the best so far.
  void offer(qv_context_t* context, const std::vector<float>& queries, int64_t dim, int64_t first, int64_t count,
             const float* rows) {
    const auto t0 = Clock::now();
    const int64_t nq = static_cast<int64_t>(ids.size());
    qv_index_t* exact = nullptr;
    check(qv_index_create(context, "Sharded,Flat", dim, QV_METRIC_L2, &exact), "exact index");
    check(qv_index_add(exact, count, rows, nullptr), "exact add");
    std::vector<float> d(static_cast<size_t>(nq));
    std::vector<int64_t> i(static_cast<size_t>(nq));
    check(qv_index_search(exact, nq, queries.data(), 1, nullptr, d.data(), i.data()), "exact search");
    qv_index_free(exact);
    for (size_t q = 0; q < size_t(nq); ++q)
      if (i[q] >= 0 && d[q] < dist[q]) {
        dist[q] = d[q];
        ids[q] = first + i[q];
      }
    seconds += since(t0);
  }
};

// Adds rows [0, n) chunk by chunk, each chunk offered to `truth` too when given; returns the
// seconds spent in the add calls.
double add_all(qv_context_t* context, qv_index_t* index, int64_t n, int64_t dim, int64_t chunk,
               const std::vector<float>& queries, Truth* truth) {
  std::vector<float> rows(static_cast<size_t>(chunk * dim));
  double adding = 0;
  const auto t0 = Clock::now();
  for (int64_t first = 0; first < n; first += chunk) {
    const int64_t count = std::min(chunk, n - first);
    make_rows(first, count, dim, 0, rows.data());
    const auto t1 = Clock::now();
    check(qv_index_add(index, count, rows.data(), nullptr), "add");
    adding += since(t1);
    if (truth) truth->offer(context, queries, dim, first, count, rows.data());
    if ((first / chunk) % 20 == 19)
      std::printf("  %lld of %lld added: %.0f s in add calls, %.0f s in all\n", (long long)(first + count),
                  (long long)n, adding, since(t0));
    std::fflush(stdout);
  }
  return adding;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 1000000000, dim = 96, train = 2000000, chunk = 5000000, nq = 10000, gt = 1;
  int32_t gpus = 0;
  std::string descriptor = "Sharded,IVF262144,PQ32";
  std::vector<int64_t> nprobes{16, 32, 64, 128};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--n") n = std::atoll(argv[i + 1]);
    else if (flag == "--dim") dim = std::atoll(argv[i + 1]);
    else if (flag == "--index") descriptor = argv[i + 1];
    else if (flag == "--train") train = std::atoll(argv[i + 1]);
    else if (flag == "--chunk") chunk = std::atoll(argv[i + 1]);
    else if (flag == "--nq") nq = std::atoll(argv[i + 1]);
    else if (flag == "--nprobe") nprobes = int_list(argv[i + 1]);
    else if (flag == "--gt") gt = std::atoll(argv[i + 1]);
    else if (flag == "--gpus") gpus = static_cast<int32_t>(std::atoll(argv[i + 1]));
    else {
      std::fprintf(stderr, "billion_bench: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  qv_context_t* context = gpus_context(gpus);
  int32_t devices = 0;
  check(qv_context_devices(context, nullptr, 0, &devices), "devices");
  std::printf("billion_bench: %lld x %lld, %s on %d GPU(s), train %lld, chunks of %lld, %lld queries\n",
              (long long)n, (long long)dim, descriptor.c_str(), devices, (long long)train, (long long)chunk,
              (long long)nq);
  std::vector<float> queries(static_cast<size_t>(nq * dim));
  make_rows(0, nq, dim, 1, queries.data());

  qv_index_t* index = nullptr;
  check(qv_index_create(context, descriptor.c_str(), dim, QV_METRIC_L2, &index), "index");
  auto t0 = Clock::now();
  {
    std::vector<float> sample(static_cast<size_t>(std::min(train, n) * dim));
    make_rows(0, std::min(train, n), dim, 0, sample.data());
    check(qv_index_train(index, std::min(train, n), sample.data()), "train");
  }
  const double train_s = since(t0);
  Truth truth(nq);
  const double add_s = add_all(context, index, n, dim, chunk, queries, gt ? &truth : nullptr);
  std::printf("build: train %.1f s, add %.1f s, total %.1f s; %.2f GiB on the GPUs (%.2f per GPU)\n", train_s, add_s,
              train_s + add_s, device_gib(index), device_gib(index) / std::max(devices, 1));
  if (gt) std::printf("exact top-1 of %lld queries, chunk by chunk: %.1f s\n", (long long)nq, truth.seconds);

  std::printf("%-10s %12s %12s %10s\n", "nprobe", "ms", "QPS", "R@1");
  for (const int64_t nprobe : nprobes) {
    qv_search_params_t params;
    check(qv_search_params_init(&params), "params");
    params.nprobe = static_cast<uint32_t>(nprobe);
    std::vector<float> d(static_cast<size_t>(nq));
    std::vector<int64_t> ids(static_cast<size_t>(nq));
    check(qv_index_search(index, nq, queries.data(), 1, &params, d.data(), ids.data()), "warm-up");
    std::vector<double> times;
    for (int r = 0; r < 5; ++r) {
      t0 = Clock::now();
      check(qv_index_search(index, nq, queries.data(), 1, &params, d.data(), ids.data()), "search");
      times.push_back(since(t0));
    }
    std::sort(times.begin(), times.end());
    int64_t hits = 0;
    for (int64_t q = 0; q < nq && gt; ++q) hits += ids[q] == truth.ids[q];
    std::printf("%-10lld %12.3f %12.0f %10.4f\n", (long long)nprobe, times[2] * 1e3, nq / times[2],
                gt ? double(hits) / double(nq) : -1.0);
    std::fflush(stdout);
  }
  qv_index_free(index);
  qv_context_free(context);
  return 0;
}
