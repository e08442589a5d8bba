// Metric-space range search (cpp/metric/, cuda/metric/): brute force, List of Clusters and SSS on the
// CPU and the GPU, as the metric-space paper's Figures 3-4: distance evaluations per query and time.
//   words    a word list (one per line, e.g. wspanish's /usr/share/dict/spanish) split 80/20 into
//            base and queries (every third query with one or two random edits), edit distance, radii 1-3
//   vectors  synthetic low-intrinsic-dimension vectors (an 8-dimensional Gaussian mapped linearly into
//            128 dimensions, plus small noise), radii returning 0.01%, 0.1% and 1% of the base; L2
//            (where "Flat" is the GEMM engine) and, with --l1, L1 (where "Flat" is the metric-space
//            brute force, one block a query, the paper's baseline)
// Times are wall clock around whole batch calls (the GPU calls block until results are on the host),
// warm, the median of 3 runs; the CPU uses --threads threads.
//
//   fvecs    a base and query set in .fvecs files (--name it, e.g. fashion-mnist), L2, the same radii
//
// --multi-gpu LC<b>: instead, the metric-space paper's multi-GPU strategies on 1, 2, 4 ... GPUs:
// "LC<b>" on one GPU, the 1-Stage strategy "Sharded,LC<b>" (every GPU searches its own objects for
// every query) and the 2-Stage strategy "Routed,LC<b>" (clusters of one List of Clusters dealt to
// the GPUs; the CPU routes each query to the GPUs its ball reaches), range search at every radius.
// usage: metric_bench [--words FILE] [--vectors N] [--l1 1] [--base-fvecs F --query-fvecs F --name S]
//                     [--devices cpu,cuda] [--threads 2] [--cpu-queries 2000] [--json FILE]
//                     [--multi-gpu LC<b>]
// Built and run by bench/metric_bench.sh.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/fvecs.h"
#include "cpp/core/context.h"
#include "cpp/index/factory.h"
#include "cpp/metric/metric_index.h"
#include "cpp/multi/routed_index.h"

namespace {

using namespace quiver;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct StringData {
  std::vector<int64_t> offsets{0};
  std::vector<uint8_t> bytes;
  int64_t n() const { return static_cast<int64_t>(offsets.size()) - 1; }
  void push(const std::string& s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
  Strings view(int64_t count) const { return Strings{std::min(count, n()), offsets.data(), bytes.data()}; }
};

// A workload: one data set, one metric, a few radii, the same queries for every index.
struct Workload {
  std::string name;
  Metric metric;
  int64_t dim = 0;  // 0: strings
  StringData base_strings, query_strings;
  std::vector<float> base_vectors, query_vectors;
  std::vector<float> radii;
  std::vector<std::string> radius_names;
  int64_t n() const { return dim ? static_cast<int64_t>(base_vectors.size()) / dim : base_strings.n(); }
  int64_t nq() const { return dim ? static_cast<int64_t>(query_vectors.size()) / dim : query_strings.n(); }
};

Workload words_workload(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<std::string> words;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) words.push_back(line);
  std::mt19937_64 rng(2024);
  std::shuffle(words.begin(), words.end(), rng);
  Workload w;
  w.name = "words";
  w.metric = Metric::edit;
  const size_t split = words.size() * 8 / 10;
  for (size_t i = 0; i < split; ++i) w.base_strings.push(words[i]);
  for (size_t i = split; i < words.size(); ++i) {
    std::string q = words[i];
    for (size_t e = 0; e < (i % 3 == 0 ? 1 + rng() % 2 : 0) && !q.empty(); ++e) q[rng() % q.size()] = char('a' + rng() % 26);
    w.query_strings.push(q);
  }
  w.radii = {1, 2, 3};
  w.radius_names = {"r=1", "r=2", "r=3"};
  return w;
}

// Radii (squared for L2) returning 0.01%, 0.1% and 1% of the base, from the pooled distances of
// 50 queries to every base vector.
void pick_radii(Workload& w) {
  const int64_t n = w.n(), dim = w.dim;
  std::vector<float> pooled;
  for (int64_t q = 0; q < std::min<int64_t>(50, w.nq()); ++q)
    for (int64_t i = 0; i < n; ++i) {
      float s = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const float d = w.query_vectors[q * dim + j] - w.base_vectors[i * dim + j];
        s += w.metric == Metric::l2 ? d * d : std::fabs(d);
      }
      pooled.push_back(s);
    }
  std::sort(pooled.begin(), pooled.end());
  for (double fraction : {0.0001, 0.001, 0.01}) {
    w.radii.push_back(pooled[static_cast<size_t>(fraction * (pooled.size() - 1))]);
    w.radius_names.push_back(fraction == 0.0001 ? "0.01%" : fraction == 0.001 ? "0.1%" : "1%");
  }
}

// A data set in .fvecs files (e.g. Fashion-MNIST converted), the first nq queries.
Workload fvecs_workload(const std::string& name, const std::string& base, const std::string& queries, int64_t nq,
                        Metric metric) {
  Workload w;
  w.name = metric == Metric::l2 ? name : name + "-L1";
  w.metric = metric;
  int64_t qdim = 0;
  w.base_vectors = read_fvecs(base, &w.dim);
  w.query_vectors = read_fvecs(queries, &qdim);
  w.query_vectors.resize(static_cast<size_t>(std::min(w.nq(), nq) * w.dim));
  pick_radii(w);
  return w;
}

Workload vector_workload(int64_t n, int64_t nq, Metric metric) {
  const int64_t dim = 128, intrinsic = 8;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> map(static_cast<size_t>(intrinsic * dim));
  for (float& v : map) v = g(rng);
  auto make = [&](int64_t count) {
    std::vector<float> x(static_cast<size_t>(count * dim));
    std::vector<float> z(intrinsic);
    for (int64_t i = 0; i < count; ++i) {
      for (float& v : z) v = g(rng);
      for (int64_t j = 0; j < dim; ++j) {
        float s = 0.05f * g(rng);
        for (int64_t t = 0; t < intrinsic; ++t) s += z[t] * map[t * dim + j];
        x[i * dim + j] = s;
      }
    }
    return x;
  };
  Workload w;
  w.name = metric == Metric::l2 ? "synth-lowdim" : "synth-lowdim-L1";
  w.metric = metric;
  w.dim = dim;
  w.base_vectors = make(n);
  w.query_vectors = make(nq);
  pick_radii(w);
  return w;
}

// Adds the workload's base to the index; returns the seconds it took (the build).
double add_base(Index& index, const Workload& w) {
  const auto t0 = Clock::now();
  if (w.dim) index.add(w.n(), w.base_vectors.data(), nullptr);
  else index.add_strings(w.base_strings.view(w.n()), nullptr);
  return seconds_since(t0);
}

// The median of 3 warm range searches of the first nq queries at radius r; `result` keeps the last.
double time_range(const Index& index, const Workload& w, size_t r, int64_t nq, RangeResult& result) {
  std::vector<double> times;
  for (int rep = 0; rep < 4; ++rep) {
    const auto t0 = Clock::now();
    result = w.dim ? index.range_search(nq, w.query_vectors.data(), w.radii[r], SearchOptions{})
                   : index.range_search_strings(w.query_strings.view(nq), w.radii[r], SearchOptions{});
    if (rep > 0) times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void run(const Workload& w, Context& context, const char* device, int64_t nq, FILE* json) {
  // "Flat" is brute force: the metric kind for strings and L1, the GEMM engine for L2 vectors.
  const std::vector<std::string> descriptors{"Flat", "LC32", "LC128", "SSS0.5", "SSS0.3"};
  nq = std::min(nq, w.nq());
  for (const std::string& descriptor : descriptors) {
    std::unique_ptr<Index> index = create_index(context, descriptor, w.dim, w.metric);
    const double build_s = add_base(*index, w);
    const auto* metric_index = dynamic_cast<const MetricIndex*>(index.get());
    for (size_t r = 0; r < w.radii.size(); ++r) {
      RangeResult result;
      const double t = time_range(*index, w, r, nq, result);
      const double hits = double(result.lims.back()) / double(nq);
      const double evaluations =
          metric_index ? double(metric_index->last_evaluations()) / double(nq) : double(w.n());
      std::printf("%-13s %-5s %-8s %-6s n %7lld nq %6lld build %8.3f s  %9.1f us/query %11.0f QPS  %9.1f evals/q "
                  "(%5.1f%%)  %8.2f hits/q\n",
                  w.name.c_str(), device, descriptor.c_str(), w.radius_names[r].c_str(), (long long)w.n(),
                  (long long)nq, build_s, t / nq * 1e6, nq / t, evaluations, 100.0 * evaluations / w.n(), hits);
      if (json)
        std::fprintf(json,
                     "{\"bench\":\"metric_range\",\"data\":\"%s\",\"device\":\"%s\",\"index\":\"%s\",\"radius\":\"%s\","
                     "\"radius_value\":%g,\"n\":%lld,\"nq\":%lld,\"build_s\":%.4f,\"search_s\":%.6f,\"qps\":%.1f,"
                     "\"evaluations_per_query\":%.2f,\"hits_per_query\":%.3f}\n",
                     w.name.c_str(), device, descriptor.c_str(), w.radius_names[r].c_str(), w.radii[r],
                     (long long)w.n(), (long long)nq, build_s, t, nq / t, evaluations, hits);
    }
    std::fflush(stdout);
  }
}

// The multi-GPU strategies of List of Clusters (--multi-gpu): time per query batch on 1, 2, 4 ...
// GPUs, against "LC<b>" on one GPU.
void run_multi_gpu(const Workload& w, const std::string& lc, int64_t threads, FILE* json) {
  const int gpus = gpu::device_count();
  std::vector<double> one_gpu(w.radii.size(), 0.0);
  for (int devices = 1; devices <= gpus; devices *= 2) {
    ContextOptions options;
    options.device = DeviceKind::cuda;
    options.cpu_threads = static_cast<int32_t>(threads);
    for (int d = 0; d < devices; ++d) options.device_ids.push_back(d);
    Context context(options);
    std::vector<std::string> descriptors{lc};
    if (devices > 1) descriptors = {"Sharded," + lc, "Routed," + lc};
    for (const std::string& descriptor : descriptors) {
      std::unique_ptr<Index> index = create_index(context, descriptor, w.dim, w.metric);
      const double build_s = add_base(*index, w);
      const auto* routed = dynamic_cast<const RoutedIndex*>(index.get());
      for (size_t r = 0; r < w.radii.size(); ++r) {
        RangeResult result;
        const double t = time_range(*index, w, r, w.nq(), result);
        if (devices == 1) one_gpu[r] = t;
        const double routed_pairs = routed ? routed->last_routed_fraction() : 1.0;
        std::printf("%-13s gpus %d  %-14s %-6s n %7lld nq %6lld build %8.3f s  %9.3f ms  %8.2f us/query  %5.2fx vs 1 "
                    "GPU  routed %5.1f%%  %8.2f hits/q\n",
                    w.name.c_str(), devices, descriptor.c_str(), w.radius_names[r].c_str(), (long long)w.n(),
                    (long long)w.nq(), build_s, t * 1e3, t / w.nq() * 1e6, one_gpu[r] / t, 100 * routed_pairs,
                    double(result.lims.back()) / double(w.nq()));
        if (json)
          std::fprintf(json,
                       "{\"bench\":\"metric_multi_gpu\",\"data\":\"%s\",\"gpus\":%d,\"index\":\"%s\",\"radius\":\"%s\","
                       "\"n\":%lld,\"nq\":%lld,\"build_s\":%.4f,\"search_s\":%.6f,\"speedup\":%.3f,"
                       "\"routed_fraction\":%.4f}\n",
                       w.name.c_str(), devices, descriptor.c_str(), w.radius_names[r].c_str(), (long long)w.n(),
                       (long long)w.nq(), build_s, t, one_gpu[r] / t, routed_pairs);
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string words_path, json_path, devices = "cpu", base_fvecs, query_fvecs, fvecs_name = "fvecs", multi_gpu;
  int64_t vectors = 0, threads = 2, cpu_queries = 2000, l1 = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--words") words_path = argv[i + 1];
    else if (a == "--vectors") vectors = std::atoll(argv[i + 1]);
    else if (a == "--devices") devices = argv[i + 1];
    else if (a == "--base-fvecs") base_fvecs = argv[i + 1];
    else if (a == "--query-fvecs") query_fvecs = argv[i + 1];
    else if (a == "--name") fvecs_name = argv[i + 1];
    else if (a == "--l1") l1 = std::atoll(argv[i + 1]);
    else if (a == "--threads") threads = std::atoll(argv[i + 1]);
    else if (a == "--cpu-queries") cpu_queries = std::atoll(argv[i + 1]);
    else if (a == "--json") json_path = argv[i + 1];
    else if (a == "--multi-gpu") multi_gpu = argv[i + 1];
  }
  FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "a");
  std::vector<Workload> workloads;
  if (!words_path.empty()) workloads.push_back(words_workload(words_path));
  if (vectors > 0) workloads.push_back(vector_workload(vectors, 10000, Metric::l2));
  if (vectors > 0 && l1) workloads.push_back(vector_workload(vectors, 10000, Metric::l1));
  if (!base_fvecs.empty()) workloads.push_back(fvecs_workload(fvecs_name, base_fvecs, query_fvecs, 10000, Metric::l2));
  std::printf("metric_bench: devices %s, CPU threads %lld, CPU queries %lld (GPU: all)\n", devices.c_str(),
              (long long)threads, (long long)cpu_queries);
  for (const Workload& w : workloads) {
    if (!multi_gpu.empty()) {
      run_multi_gpu(w, multi_gpu, threads, json);
      continue;
    }
    if (devices.find("cpu") != std::string::npos) {
      ContextOptions options;
      options.device = DeviceKind::cpu;
      options.cpu_threads = static_cast<int32_t>(threads);
      Context context(options);
      run(w, context, "cpu", cpu_queries, json);
    }
    if (devices.find("cuda") != std::string::npos) {
      ContextOptions options;
      options.device = DeviceKind::cuda;
      options.cpu_threads = static_cast<int32_t>(threads);
      Context context(options);
      run(w, context, "cuda", w.nq(), json);
    }
  }
  if (json) std::fclose(json);
  return 0;
}
