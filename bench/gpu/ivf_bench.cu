// GPU benchmark of the CUDA backend's inverted-file indexes (gpu_ivf.h), BENCHMARKS.md protocol:
// batches of 10 000 queries, k = 10, host to host (and device resident), warm-up then the median of
// --runs runs; recall@10 against the exact fp32 search (gpu::knn). Models are trained here with the
// backend's GPU k-means (coarse centroids; PQ codebooks per sub-space on residuals of a sample), as
// the engine does.
//
//   synthetic recipe 1M x 128 (tools/quiver/synth.cpp): IVF1024,Flat and IVF1024,PQ{16,32,64} (--pq-only: PQ alone)
//     nprobe sweeps, fp32 and fp16 tables, PQ with refine; train + add time of IVF4096,PQ32.
//   Fashion-MNIST (raw 0..255 pixels; --fashion DIR or QUIVER_FASHION_MNIST_DIR): IVF256,Flat sweep,
//     latency at batch 1 and 100 (nprobe 16), IVF256,PQ56 with fp16 tables (recall must rise).
//
// Built by bench/gpu_ivf_bench.sh against a CUDA build of libquiver.a.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"
#include "tools/quiver/idx_io.h"
#include "tools/quiver/synth.h"

namespace {

using namespace quiver;
using Clock = std::chrono::steady_clock;

int g_runs = 5;
bool g_quick = false;
bool g_pq_only = false;  // synthetic: only the IVF1024,PQ{16,32,64} sweeps

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Warm-up, then the median of g_runs timings of fn (which blocks until its results are written).
double median_seconds(const std::function<void()>& fn, int runs = -1) {
  if (runs < 0) runs = g_runs;
  fn();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    cudaDeviceSynchronize();
    const auto t0 = Clock::now();
    fn();
    cudaDeviceSynchronize();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Data {
  std::string name;
  int64_t n = 0, nq = 0, dim = 0;
  std::vector<float> base, queries;
  std::vector<int64_t> truth;  // nq x 10
};

double recall10(const Data& d, const std::vector<int64_t>& ids) {
  int64_t hits = 0;
  for (int64_t q = 0; q < d.nq; ++q)
    for (int r = 0; r < 10; ++r)
      for (int t = 0; t < 10; ++t) hits += ids[q * 10 + r] == d.truth[q * 10 + t] ? 1 : 0;
  return double(hits) / double(d.nq * 10);
}

void ground_truth(gpu::Resources& res, Data& d) {
  d.truth.resize(size_t(d.nq * 10));
  std::vector<float> dist(size_t(d.nq * 10));
  gpu::knn(res, Metric::l2, d.base.data(), nullptr, d.n, d.dim, d.queries.data(), d.nq, 10, dist.data(), d.truth.data());
}

struct Trained {
  std::vector<float> centroids, codebooks;
  std::vector<int64_t> assign;  // of every base vector, from k-means
};

void train_coarse(gpu::Resources& res, const Data& d, int64_t nlist, Trained& t) {
  t.centroids.resize(size_t(nlist * d.dim));
  t.assign.resize(size_t(d.n));
  KmeansOptions o;
  o.iterations = 20;
  o.max_points_per_centroid = 256;
  gpu::kmeans(res, d.dim, d.n, d.base.data(), nlist, o, t.centroids.data(), t.assign.data());
}

// PQ codebooks: per sub-space, k-means (256) of the residuals of a sample of the base.
void train_pq(gpu::Resources& res, const Data& d, int64_t m, Trained& t) {
  const int64_t dsub = d.dim / m;
  const int64_t sample = std::min<int64_t>(d.n, 65536);
  const int64_t stride = d.n / sample;
  std::vector<float> sub(size_t(sample * dsub));
  t.codebooks.resize(size_t(m * 256 * dsub));
  KmeansOptions o;
  o.iterations = 20;
  o.max_points_per_centroid = 0;
  for (int64_t s = 0; s < m; ++s) {
    for (int64_t i = 0; i < sample; ++i) {
      const int64_t row = i * stride;
      const float* x = d.base.data() + row * d.dim + s * dsub;
      const float* c = t.centroids.data() + t.assign[row] * d.dim + s * dsub;
      for (int64_t j = 0; j < dsub; ++j) sub[i * dsub + j] = x[j] - c[j];
    }
    gpu::kmeans(res, dsub, sample, sub.data(), 256, o, t.codebooks.data() + s * 256 * dsub, nullptr);
  }
}

gpu::IvfDevicePtr build(gpu::Resources& res, const Data& d, int64_t nlist, int64_t m, const Trained& t, bool keep_raw,
                        double* add_seconds) {
  gpu::IvfModelView v;
  v.metric = Metric::l2;
  v.dim = d.dim;
  v.nlist = nlist;
  v.centroids = t.centroids.data();
  v.pq_m = m;
  v.pq_codebooks = m > 0 ? t.codebooks.data() : nullptr;
  v.keep_raw = keep_raw;
  auto ivf = gpu::make_ivf(res, v);
  std::vector<int64_t> ids(size_t(d.n));
  std::iota(ids.begin(), ids.end(), 0);
  cudaDeviceSynchronize();
  const auto t0 = Clock::now();
  gpu::ivf_add(res, *ivf, d.n, d.base.data(), ids.data(), nullptr);
  if (add_seconds) *add_seconds = seconds_since(t0);
  return ivf;
}

void print_header() {
  std::printf("%-16s %-22s %-28s %8s %9s %12s %12s\n", "dataset", "index", "params", "recall10", "ms", "QPS h2h",
              "QPS dev");
}

// One sweep point: host-to-host and device-resident throughput of the whole query batch.
void measure(gpu::Resources& res, const Data& d, const gpu::IvfDevice& ivf, const std::string& index,
             const gpu::IvfSearchOptions& o, const std::string& params, float* q_dev, float* d_dev, int64_t* i_dev) {
  const int64_t k = 10;
  std::vector<float> dist(size_t(d.nq * k));
  std::vector<int64_t> ids(size_t(d.nq * k));
  const double host = median_seconds([&] {
    gpu::ivf_search(res, ivf, d.nq, d.queries.data(), k, o, dist.data(), ids.data());
  });
  const double recall = recall10(d, ids);
  const double dev = median_seconds([&] { gpu::ivf_search(res, ivf, d.nq, q_dev, k, o, d_dev, i_dev); });
  std::printf("%-16s %-22s %-28s %8.4f %9.3f %12.0f %12.0f\n", d.name.c_str(), index.c_str(), params.c_str(), recall,
              host * 1e3, double(d.nq) / host, double(d.nq) / dev);
  std::fflush(stdout);
}

struct DeviceCopies {
  float* q = nullptr;
  float* dist = nullptr;
  int64_t* ids = nullptr;
  explicit DeviceCopies(const Data& d) {
    cudaMalloc(&q, size_t(d.nq * d.dim) * 4);
    cudaMalloc(&dist, size_t(d.nq * 10) * 4);
    cudaMalloc(&ids, size_t(d.nq * 10) * 8);
    cudaMemcpy(q, d.queries.data(), size_t(d.nq * d.dim) * 4, cudaMemcpyHostToDevice);
  }
  ~DeviceCopies() {
    cudaFree(q);
    cudaFree(dist);
    cudaFree(ids);
  }
};

void sweep(gpu::Resources& res, const Data& d, const gpu::IvfDevice& ivf, const std::string& index,
           const std::vector<int64_t>& nprobes, ComputeMode mode, int64_t refine_k) {
  DeviceCopies dc(d);
  for (int64_t nprobe : nprobes) {
    gpu::IvfSearchOptions o;
    o.nprobe = nprobe;
    o.mode = mode;
    o.refine_k = refine_k;
    std::string params = "nprobe=" + std::to_string(nprobe);
    if (mode == ComputeMode::fp16) params += " fp16";
    if (refine_k > 0) params += " refine=" + std::to_string(refine_k);
    measure(res, d, ivf, index, o, params, dc.q, dc.dist, dc.ids);
  }
}

// Median latency of single queries (batch 1) and of batches of 100: host to host, and with queries
// and results in device memory.
void latency(gpu::Resources& res, const Data& d, const gpu::IvfDevice& ivf, const std::string& index, int64_t nprobe) {
  gpu::IvfSearchOptions o;
  o.nprobe = nprobe;
  DeviceCopies dc(d);
  for (int64_t batch : {1, 100}) {
    const int64_t reps = batch == 1 ? 500 : 50;
    std::vector<float> dist(size_t(batch * 10));
    std::vector<int64_t> ids(size_t(batch * 10));
    for (bool device : {false, true}) {
      std::vector<double> t;
      for (int64_t r = 0; r < reps + 5; ++r) {
        const int64_t first = (r * batch) % (d.nq - batch + 1);
        const auto t0 = Clock::now();
        if (device) {
          gpu::ivf_search(res, ivf, batch, dc.q + first * d.dim, 10, o, dc.dist, dc.ids);
        } else {
          gpu::ivf_search(res, ivf, batch, d.queries.data() + first * d.dim, 10, o, dist.data(), ids.data());
        }
        if (r >= 5) t.push_back(seconds_since(t0));
      }
      std::sort(t.begin(), t.end());
      std::printf("%-16s %-22s nprobe=%-3lld batch %-4lld latency %s median %.4f ms  p90 %.4f ms\n", d.name.c_str(),
                  index.c_str(), (long long)nprobe, (long long)batch, device ? "device-resident" : "host to host",
                  t[t.size() / 2] * 1e3, t[t.size() * 9 / 10] * 1e3);
    }
  }
  std::fflush(stdout);
}

void bench_synthetic(gpu::Resources& res) {
  auto spec = *qvtool::synth_spec_by_name("synth-1m-128");
  if (g_quick) spec.n = 200000;
  Data d;
  d.name = g_quick ? "synth-200k-128" : "synth-1m-128";
  auto t0 = Clock::now();
  auto base = qvtool::synth_generate(spec, qvtool::SynthPart::Base);
  auto queries = qvtool::synth_generate(spec, qvtool::SynthPart::Queries);
  d.n = base.rows, d.nq = queries.rows, d.dim = base.cols;
  d.base = std::move(base.data);
  d.queries = std::move(queries.data);
  std::printf("# %s generated in %.1f s\n", d.name.c_str(), seconds_since(t0));
  ground_truth(res, d);

  // Train + add of IVF4096,PQ32 (the issue's build-time target).
  if (!g_pq_only) {
    cudaDeviceSynchronize();
    t0 = Clock::now();
    Trained t;
    train_coarse(res, d, 4096, t);
    const double coarse = seconds_since(t0);
    train_pq(res, d, 32, t);
    const double train = seconds_since(t0);
    double add = 0;
    auto ivf = build(res, d, 4096, 32, t, false, &add);
    std::printf("# %s IVF4096,PQ32 build: coarse k-means %.2f s, PQ training %.2f s, add %.2f s, total %.2f s\n",
                d.name.c_str(), coarse, train - coarse, add, train + add);
    sweep(res, d, *ivf, "IVF4096,PQ32", {16, 64}, ComputeMode::fp32, 0);
  }

  Trained t;
  t0 = Clock::now();
  train_coarse(res, d, 1024, t);
  std::printf("# coarse k-means 1024: %.2f s\n", seconds_since(t0));
  print_header();
  if (!g_pq_only) {
    double add = 0;
    auto ivf = build(res, d, 1024, 0, t, false, &add);
    std::printf("# IVF1024,Flat add %.2f s\n", add);
    sweep(res, d, *ivf, "IVF1024,Flat", {1, 2, 4, 8, 16, 32, 64, 128, 256}, ComputeMode::fp32, 0);
    latency(res, d, *ivf, "IVF1024,Flat", 4);
  }
  for (int64_t m : {16, 32, 64}) {
    train_pq(res, d, m, t);
    double add = 0;
    auto ivf = build(res, d, 1024, m, t, m == 32, &add);
    const std::string name = "IVF1024,PQ" + std::to_string(m);
    std::printf("# %s add %.2f s\n", name.c_str(), add);
    sweep(res, d, *ivf, name, {1, 2, 4, 5, 6, 8, 16, 32, 64, 128, 256}, ComputeMode::fp32, 0);
    sweep(res, d, *ivf, name, {2, 4, 5, 6, 8, 16, 64}, ComputeMode::fp16, 0);
    if (m == 32) sweep(res, d, *ivf, name + ",Refine", {2, 4, 8, 16, 32}, ComputeMode::fp32, 100);
  }
}

void bench_fashion(gpu::Resources& res, const std::string& dir) {
  Data d;
  d.name = "fashion-mnist";
  auto base = qvtool::read_idx_ubyte(dir + "/train-images-idx3-ubyte.gz");
  auto queries = qvtool::read_idx_ubyte(dir + "/t10k-images-idx3-ubyte.gz");
  d.n = base.rows, d.nq = queries.rows, d.dim = base.cols;
  d.base = std::move(base.data);
  d.queries = std::move(queries.data);
  ground_truth(res, d);
  Trained t;
  train_coarse(res, d, 256, t);
  print_header();
  {
    auto ivf = build(res, d, 256, 0, t, false, nullptr);
    sweep(res, d, *ivf, "IVF256,Flat", {1, 2, 4, 8, 12, 16, 24, 32, 64, 256}, ComputeMode::fp32, 0);
    latency(res, d, *ivf, "IVF256,Flat", 16);
  }
  {
    train_pq(res, d, 56, t);
    auto ivf = build(res, d, 256, 56, t, true, nullptr);
    sweep(res, d, *ivf, "IVF256,PQ56", {1, 4, 16, 64, 256}, ComputeMode::fp32, 0);
    sweep(res, d, *ivf, "IVF256,PQ56", {1, 4, 16, 64, 256}, ComputeMode::fp16, 0);
    sweep(res, d, *ivf, "IVF256,PQ56,Refine", {4, 16, 32}, ComputeMode::fp32, 100);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string fashion;
  if (const char* env = std::getenv("QUIVER_FASHION_MNIST_DIR")) fashion = env;
  bool synthetic = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) g_runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--quick") g_quick = true;
    else if (a == "--pq-only") g_pq_only = true;
    else if (a == "--fashion" && i + 1 < argc) fashion = argv[++i];
    else if (a == "--no-synthetic") synthetic = false;
    else {
      std::fprintf(stderr, "usage: ivf_bench [--runs N] [--quick] [--pq-only] [--fashion DIR] [--no-synthetic]\n");
      return 2;
    }
  }
  try {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("# device: %s, %d SMs; batch 10 000 queries, k = 10, median of %d runs after a warm-up\n", prop.name,
                prop.multiProcessorCount, g_runs);
    auto res = gpu::make_resources();
    if (!fashion.empty()) bench_fashion(*res, fashion);
    if (synthetic) bench_synthetic(*res);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ivf_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
