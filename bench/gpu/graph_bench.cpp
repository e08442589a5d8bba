// GPU graph search (SONG, cuda/graph/) on a data set in .fvecs files: recall@10 and QPS per queue
// width, host to host, 10 000 queries (or the file's), warm, the median of 5 runs with a device
// synchronisation around each; plus batch-1 latency. The graph is a k-NN graph from quiver's exact
// GPU search with reverse edges (a stand-in until the Graph<R> index's pruned graph is searched
// through the C API), entry points a fixed sample.
//
// usage: graph_bench --base FILE --query FILE [--degree 32] [--widths 16,32,64,128] [--probes 1]
//                    [--visited table,bloom,cuckoo] [--queries-per-warp 1,2,4] [--json FILE]
// --visited: the walk's visited sets to sweep (gpu_graph.h's VisitedSet; default the library's, bloom).
// --queries-per-warp: SONG's multi-query per warp to sweep (GraphSearchOptions::queries_per_warp, 1, 2
// or 4; default 1). With 2 or 4 the batch-1 query runs without a crew (one group of 16 or 8 lanes).
// Built and run by bench/gpu_graph_bench.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/fvecs.h"
#include "cpp/backend/gpu.h"
#include "cpp/backend/gpu_graph.h"

namespace {

using namespace quiver;

std::vector<int64_t> parse_list(const char* s) {
  std::vector<int64_t> v;
  for (const char* p = s; *p;) {
    v.push_back(std::strtoll(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// "table,bloom,cuckoo" (any of them, in any order).
std::vector<std::pair<std::string, gpu::VisitedSet>> parse_visited(const std::string& list) {
  std::vector<std::pair<std::string, gpu::VisitedSet>> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, end - at);
    if (name == "table") out.push_back({name, gpu::VisitedSet::hash_table});
    else if (name == "bloom") out.push_back({name, gpu::VisitedSet::bloom});
    else if (name == "cuckoo") out.push_back({name, gpu::VisitedSet::cuckoo});
    else {
      std::fprintf(stderr, "graph_bench: --visited takes table, bloom and cuckoo, not \"%s\"\n", name.c_str());
      std::exit(2);
    }
    at = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string base_path, query_path, json_path;
  int64_t degree = 32, probes = 1;
  std::vector<int64_t> widths = {16, 32, 48, 64, 96, 128, 192, 256};
  std::vector<std::pair<std::string, gpu::VisitedSet>> visited_sets = {{"bloom", gpu::VisitedSet::bloom}};
  std::vector<int64_t> queries_per_warp = {1};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--base") base_path = argv[i + 1];
    else if (a == "--query") query_path = argv[i + 1];
    else if (a == "--degree") degree = std::atoll(argv[i + 1]);
    else if (a == "--probes") probes = std::atoll(argv[i + 1]);
    else if (a == "--widths") widths = parse_list(argv[i + 1]);
    else if (a == "--json") json_path = argv[i + 1];
    else if (a == "--visited") visited_sets = parse_visited(argv[i + 1]);
    else if (a == "--queries-per-warp") queries_per_warp = parse_list(argv[i + 1]);
  }
  for (int64_t per_warp : queries_per_warp)
    if (per_warp != 1 && per_warp != 2 && per_warp != 4) {
      std::fprintf(stderr, "graph_bench: --queries-per-warp takes 1, 2 and 4, not %lld\n", (long long)per_warp);
      return 2;
    }
  int64_t dim = 0, qdim = 0;
  const std::vector<float> base = read_fvecs(base_path, &dim), queries = read_fvecs(query_path, &qdim);
  const int64_t n = int64_t(base.size()) / dim, nq = int64_t(queries.size()) / dim;
  const int64_t k = 10;
  gpu::ResourcesPtr resources = gpu::make_resources();
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("graph_bench: %s, n %lld, dim %lld, nq %lld, degree %lld, probes %lld\n", prop.name, (long long)n,
              (long long)dim, (long long)nq, (long long)degree, (long long)probes);

  // The k-NN graph (self dropped) and the ground truth, both by exact GPU search.
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> kd(size_t(n * (degree + 1)));
  std::vector<int64_t> ki(size_t(n * (degree + 1)));
  gpu::knn(*resources, Metric::l2, base.data(), nullptr, n, dim, base.data(), n, degree + 1, kd.data(), ki.data());
  const double knn_s = seconds_since(t0);
  // Rows: the first half of the k-NN list, then reverse edges (closest first), then more k-NN.
  std::vector<std::vector<std::pair<float, int32_t>>> incoming(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= degree; ++j)
      if (ki[i * (degree + 1) + j] != i) incoming[ki[i * (degree + 1) + j]].push_back({kd[i * (degree + 1) + j], int32_t(i)});
  std::vector<int32_t> adjacency(size_t(n * degree), -1);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> row;
    auto push = [&](int32_t r) {
      if (r != i && int64_t(row.size()) < degree && std::find(row.begin(), row.end(), r) == row.end()) row.push_back(r);
    };
    for (int64_t j = 0; j <= degree && int64_t(row.size()) < degree / 2; ++j) push(int32_t(ki[i * (degree + 1) + j]));
    std::sort(incoming[i].begin(), incoming[i].end());
    for (const auto& e : incoming[i]) push(e.second);
    for (int64_t j = 0; j <= degree; ++j) push(int32_t(ki[i * (degree + 1) + j]));
    std::copy(row.begin(), row.end(), adjacency.begin() + i * degree);
  }
  const double graph_s = seconds_since(t0);
  std::vector<float> gd(size_t(nq * k));
  std::vector<int64_t> gt(size_t(nq * k));
  gpu::knn(*resources, Metric::l2, base.data(), nullptr, n, dim, queries.data(), nq, k, gd.data(), gt.data());
  std::printf("k-NN graph (exact GPU, k = %lld): %.2f s; with reverse edges: %.2f s\n", (long long)degree + 1, knn_s,
              graph_s);

  std::vector<int32_t> entries;
  for (int64_t e = 0; e < 32; ++e) entries.push_back(int32_t((e * 7919 * 104729) % n));
  gpu::GraphDevicePtr graph = gpu::make_graph(*resources, dim, Metric::l2);
  gpu::graph_upload(*resources, *graph, n, base.data(), degree, adjacency.data(), nullptr, entries.data(),
                    int64_t(entries.size()));

  FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "a");
  std::vector<float> d(size_t(nq * k));
  std::vector<int64_t> ids(size_t(nq * k));
  // One sweep point: recall@10 and the median time of a whole batch, and the median batch-1 time.
  struct Point {
    double recall, seconds, batch1_seconds;
  };
  const auto measure = [&](const gpu::GraphSearchOptions& options) {
    std::vector<double> times;
    for (int run = 0; run < 6; ++run) {
      cudaDeviceSynchronize();
      const auto t = std::chrono::steady_clock::now();
      gpu::graph_search(*resources, *graph, nq, queries.data(), k, options, d.data(), ids.data());
      cudaDeviceSynchronize();
      if (run > 0) times.push_back(seconds_since(t));
    }
    std::sort(times.begin(), times.end());
    int64_t found = 0;
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t j = 0; j < k; ++j) found += std::count(&gt[i * k], &gt[i * k] + k, ids[i * k + j]);
    std::vector<double> one;
    for (int run = 0; run < 51; ++run) {
      const auto t = std::chrono::steady_clock::now();
      gpu::graph_search(*resources, *graph, 1, queries.data() + (run % nq) * dim, k, options, d.data(), ids.data());
      if (run > 0) one.push_back(seconds_since(t));
    }
    std::sort(one.begin(), one.end());
    return Point{double(found) / double(nq * k), times[times.size() / 2], one[one.size() / 2]};
  };
  std::printf("%8s %7s %8s %10s %12s %12s %14s\n", "visited", "q/warp", "width", "recall@10", "ms (10k)", "QPS",
              "batch-1 ms");
  for (const auto& [visited_name, visited] : visited_sets) {
    for (int64_t per_warp : queries_per_warp) {
      for (int64_t width : widths) {
        gpu::GraphSearchOptions options;
        options.search_width = width;
        options.probes = probes;
        options.visited = visited;
        options.queries_per_warp = per_warp;
        const Point p = measure(options);
        std::printf("%8s %7lld %8lld %10.4f %12.3f %12.0f %14.4f\n", visited_name.c_str(), (long long)per_warp,
                    (long long)width, p.recall, p.seconds * 1e3, double(nq) / p.seconds, p.batch1_seconds * 1e3);
        if (json)
          std::fprintf(json,
                       "{\"bench\":\"graph_search\",\"device\":\"%s\",\"n\":%lld,\"d\":%lld,\"nq\":%lld,\"k\":10,"
                       "\"index\":\"Graph%lld (k-NN + reverse)\",\"visited\":\"%s\",\"queries_per_warp\":%lld,"
                       "\"search_width\":%lld,\"probes\":%lld,\"recall10\":%.4f,\"search_s\":%.6f,\"qps\":%.0f,"
                       "\"batch1_ms\":%.4f}\n",
                       prop.name, (long long)n, (long long)dim, (long long)nq, (long long)degree, visited_name.c_str(),
                       (long long)per_warp, (long long)width, (long long)probes, p.recall, p.seconds,
                       double(nq) / p.seconds, p.batch1_seconds * 1e3);
      }
    }
  }
  if (json) std::fclose(json);
  return 0;
}
