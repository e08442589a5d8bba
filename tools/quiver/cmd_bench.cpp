// quiver bench: the BENCHMARKS.md protocol in one command — build (train + add), ground truth, one
// warm-up, then the median of repeated timed searches of the whole query batch in one call, recall@10;
// optionally batch-1 / batch-100 latencies. Inverted-file indexes are swept over nprobe (and the
// refine factor of ",Refine" indexes), one row per point. Prints a table and appends JSON lines;
// bench/plot_curves.py turns them into the recall-QPS plot.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "bench_common.h"
#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "dist_bench.h"
#include "errors.h"
#include "eval.h"
#include "index_build.h"
#include "library.h"
#include "machine.h"
#include "progress.h"
#include "timing.h"

namespace qvtool {
namespace {

constexpr int64_t kLatencyBatches[] = {1, 100};
constexpr int64_t kMaxLatencyQueries = 1000;  // queries spent on one latency row at most...
constexpr double kLatencyBudgetS = 10.0;      // ...or this long, once kProtocolRepeats batches ran

class Bench {
 public:
  Bench(const Index &index, const FloatMatrix &queries, const IdMatrix &gt, const BenchSetup &s)
      : index_(index), queries_(queries), gt_(gt), s_(s),
        dist_(size_t(queries.rows * s.k)), ids_(size_t(queries.rows * s.k)) {}

  // All queries in one call: warm-up, then the median of s.repeats runs.
  BenchRow throughput(const SweepPoint &point) {
    qv_search_params_t p = params(point);
    search(0, queries_.rows, p);  // warm-up: first-touch allocations, caches, GPU clocks
    std::vector<double> times;
    const std::string label = point_label(point);
    Progress progress("timing " + (label.empty() ? std::string("search") : label), s_.repeats);
    for (int r = 0; r < s_.repeats; ++r) {
      Stopwatch clock;
      search(0, queries_.rows, p);
      times.push_back(clock.seconds());
      progress.update(r + 1);
    }
    progress.done();
    return finish(point, queries_.rows, times, queries_.rows);
  }

  // Consecutive batches of `batch` queries, each its own call; the median per-batch time.
  BenchRow latency(const SweepPoint &point, int64_t batch) {
    qv_search_params_t p = params(point);
    const int64_t batches = std::min(queries_.rows, kMaxLatencyQueries) / batch;
    search(0, batch, p);  // warm-up
    std::vector<double> times;
    Progress progress("latency batch " + std::to_string(batch), batches);
    Stopwatch budget;
    int64_t b = 0;
    for (; b < batches; ++b) {
      if (b >= kProtocolRepeats && budget.seconds() > kLatencyBudgetS) break;
      Stopwatch clock;
      search(b * batch, batch, p);
      times.push_back(clock.seconds());
      progress.update(b + 1);
    }
    progress.done();
    return finish(point, batch, times, b * batch);
  }

 private:
  qv_search_params_t params(const SweepPoint &point) const { return search_params(point, s_.mode); }

  // Searches queries [q0, q0 + nq), writing their rows of the result buffers.
  void search(int64_t q0, int64_t nq, const qv_search_params_t &p) {
    check(qv_index_search(index_.get(), nq, queries_.row(q0), uint32_t(s_.k), &p,
                          dist_.data() + q0 * s_.k, ids_.data() + q0 * s_.k),
          "searching");
  }

  BenchRow finish(const SweepPoint &point, int64_t batch, const std::vector<double> &times,
                  int64_t answered) {
    BenchRow r{point, batch, median(times), NAN, NAN, int64_t(times.size())};
    if (s_.k >= kRecallDepth) r.recall10 = recall_at(ids_.data(), answered, s_.k, gt_, kRecallDepth);
    r.recall_k = recall_at(ids_.data(), answered, s_.k, gt_, std::min(s_.k, gt_.cols));
    return r;
  }

  const Index &index_;
  const FloatMatrix &queries_;
  const IdMatrix &gt_;
  const BenchSetup &s_;
  std::vector<float> dist_;
  std::vector<int64_t> ids_;
};

// The table's first column: wide enough for the longest descriptors ("OPQ32,IVF4096,PQ32,Refine").
int index_width(const BenchSetup &s) { return std::max(20, int(s.descriptor.size())); }

void print_row(const BenchSetup &s, const BenchRow &r) {
  std::string params = point_label(r.point);
  if (s.mode != "fp32") params += (params.empty() ? "" : ",") + s.mode;
  if (params.empty()) params = "-";
  // recall@10 as the protocol defines it; recall@k when k < 10 (the header says which).
  char recall[16];
  std::snprintf(recall, sizeof recall, "%.4f", std::isnan(r.recall10) ? r.recall_k : r.recall10);
  std::printf("%-*s %-20s %7lld %12.6f %12.0f %9s %10.3f\n", index_width(s), s.descriptor.c_str(),
              params.c_str(), (long long)r.batch, r.search_s, double(r.batch) / r.search_s, recall,
              s.build_s());
}

}  // namespace

int run_bench(int argc, char **argv) {
  Options o("bench", "--dataset DATASET [options]",
            "Builds the index (train, then add; timed apart), computes (or reads) ground truth, warms\n"
            "up once and reports the median of --repeats timed searches of all queries in one call,\n"
            "QPS and recall@10, for every point of the nprobe (x refine) sweep of IVF indexes and the\n"
            "--width sweep of graph indexes.\n"
            "DATASET: fashion-mnist, synth-100k-128 | synth-1m-128 | synth-10m-96 (generated in memory),\n"
            "or a `quiver gen` folder (its gt.ivecs is used when present).\n"
            "Plot: python3 bench/plot_curves.py FILE.json (recall@10 vs QPS PNG beside it).\n"
            "--distributed (a quiver built with MPI): every rank reads DATASET and adds its contiguous\n"
            "slice of the base rows (ids: the base rows); rank 0 times the searches and prints the rows.\n"
            "Across hosts: mpirun --hostfile FILE, the same quiver build and data path on every host.",
            {{"dataset", "DATASET", "the data set"},
             {"index", "DESCRIPTOR", "index descriptor: Flat (default), IVF1024,Flat, IVF1024,PQ32, "
                                     "OPQ32,IVF1024,PQ32, ...,Refine; over the --gpus devices: "
                                     "Sharded<S>,<kind>, Replicated<R>,<kind>, Replicated,Sharded<S>,<kind>"},
             {"metric", "METRIC", "l2 | ip | cosine (default l2)"},
             {"k", "K", "neighbours per query (default 10)"},
             {"nq", "N", "use the first N queries (default all)"},
             {"ntrain", "N", "train on the first N base vectors (default all)"},
             {"threads", "N", "CPU threads (default: one per core)"},
             {"device", "KIND", "auto | cpu | cuda (default auto)"},
             gpus_option(),
             {"repeats", "R", "timed runs per measurement (default 5, the protocol's minimum)"},
             {"nprobe", "LIST", "nprobe sweep, e.g. 1,2,4,8 (IVF; default 1,2,4,... up to "
                                "min(256, nlist))"},
             {"refine", "LIST", "refine factors of a \",Refine\" index, e.g. 2,4,8 (default: the "
                                "index's); each is swept over all nprobe values"},
             {"mode", "MODE", "GPU arithmetic (exact-search GEMM, IVF tables): fp32 (default) | "
                              "tf32 | fp16 | bf16"},
             {"width", "LIST", "search_width sweep of a graph index, e.g. 16,32,64,128 (default: "
                               "the index's)"},
             {"latency", "", "also time batches of 1 and 100 queries at every sweep point"},
             {"json", "FILE", "append one JSON object per measurement to FILE"},
             {"distributed", "", "one index over MPI ranks, each holding a slice of the base rows on "
                                 "its own context: mpirun -np N quiver bench --distributed ... (not with "
                                 "--latency)"}});
  if (!o.parse(argc, argv, 2)) return 0;
  const bool distributed = o.has("distributed");
  if (distributed) require_distributed();  // a build without MPI says so before anything else
  const DataSource src(o.require("dataset"));
  if (!src.is_dataset())
    throw UsageError("--dataset: bench needs base and query sets: fashion-mnist, a synth-* name or a "
                     "`quiver gen` folder, not a single file");
  BenchSetup s;
  s.dataset = src.name();
  s.descriptor = o.get_or("index", "Flat");
  s.metric = parse_metric(o.get_or("metric", "l2"));
  s.mode = o.get_or("mode", "fp32");
  parse_compute_mode(s.mode);  // a bad value fails before any work
  s.k = o.get_int("k", 10, 1, QV_MAX_K);
  const int64_t max_nq = o.get_int("nq", kAllRows, 1, kAllRows);
  const int64_t max_ntrain = o.get_int("ntrain", kAllRows, 1, kAllRows);
  s.repeats = int(o.get_int("repeats", kProtocolRepeats, 1, 1000));
  const std::vector<SweepPoint> sweep = sweep_points(o, s.descriptor);
  const std::optional<std::string> json_path = o.get("json");
  const std::string command = command_line(argc, argv);
  if (distributed) {
    // Latency rows stop on the root's clock, which the other ranks cannot follow call for call.
    if (o.has("latency")) throw UsageError("--latency: not available with --distributed");
    DistBenchConfig c;
    c.dataset = o.require("dataset");
    c.descriptor = s.descriptor;
    c.metric = s.metric;
    c.mode = s.mode;
    c.k = s.k;
    c.max_nq = max_nq;
    c.max_ntrain = max_ntrain;
    c.repeats = s.repeats;
    c.sweep = sweep;
    c.json_path = json_path;
    c.command = command;
    c.device = parse_device(o.get_or("device", "auto"));
    c.threads = int(o.get_int("threads", 0, 0, 4096));
    c.gpus = parse_gpus(o.get("gpus"), c.device);
    return run_dist_bench(c);
  }
  std::ofstream json;  // opened first: a bad path should fail before minutes of work
  if (json_path) {
    json.open(*json_path, std::ios::app);
    if (!json) throw Failure(*json_path + ": cannot open for appending");
  }
  const qv_device_kind_t device = parse_device(o.get_or("device", "auto"));
  Context ctx(device, int(o.get_int("threads", 0, 0, 4096)), parse_gpus(o.get("gpus"), device));
  s.device = ctx.device_name();
  s.threads = ctx.threads();
  if (ctx.on_cuda()) s.gpu = gpu_models(ctx.device_ids());

  FloatMatrix base = src.base();
  FloatMatrix queries = src.queries(max_nq);
  if (queries.cols != base.cols)
    throw Failure(src.name() + ": queries have dimension " + std::to_string(queries.cols) +
                  ", base vectors " + std::to_string(base.cols));
  s.n = base.rows, s.d = base.cols, s.nq = queries.rows;
  s.ntrain = std::min(max_ntrain, s.n);

  std::printf("quiver bench (quiver %s)\n", qv_version_string());
  std::printf("machine: %s, %d logical CPUs; device %s%s; threads %d\n", cpu_model().c_str(),
              cpu_cores(), s.device.c_str(), s.gpu.empty() ? "" : (" (" + s.gpu + ")").c_str(),
              s.threads);
  std::printf("command: %s\n", command.c_str());
  const double load = load_average();
  if (load > 0.5 * cpu_cores())
    std::printf("note:    load average %.1f on %d CPUs before the run: other work may disturb timings\n",
                load, cpu_cores());
  std::printf("data:    %s n=%lld d=%lld nq=%lld metric=%s k=%lld\n", s.dataset.c_str(),
              (long long)s.n, (long long)s.d, (long long)s.nq, metric_name(s.metric), (long long)s.k);
  std::fflush(stdout);

  BuiltIndex built = build_index(ctx, s.descriptor, s.metric, base, s.ntrain);
  s.train_s = built.train_s, s.add_s = built.add_s;
  const qv_index_info_t info = built.index.info();
  s.host_bytes = info.host_bytes, s.device_bytes = info.device_bytes;
  std::printf("build:   \"%s\" build_s=%.3f (train %.3f s on %lld vectors, add %.3f s); "
              "%.1f MB host, %.1f MB device\n",
              s.descriptor.c_str(), s.build_s(), s.train_s, (long long)s.ntrain, s.add_s,
              double(s.host_bytes) / 1e6, double(s.device_bytes) / 1e6);
  std::fflush(stdout);

  const int64_t gt_depth = std::max(s.k, kRecallDepth);
  std::optional<IdMatrix> gt = src.ground_truth(s.nq);
  if (gt && gt->rows >= s.nq && gt->cols >= gt_depth && s.metric == QV_METRIC_L2) {
    std::printf("truth:   %s/gt.ivecs (top-%lld)\n", src.name().c_str(), (long long)gt->cols);
  } else {
    Stopwatch clock;
    gt = exact_knn(ctx, s.metric, base, queries, std::min(gt_depth, s.n));
    std::printf("truth:   exact qv_knn top-%lld in %.2f s\n", (long long)gt->cols, clock.seconds());
  }
  std::fflush(stdout);
  if (s.repeats < kProtocolRepeats)
    std::printf("note:    %d repeats, below the protocol's %d\n", s.repeats, kProtocolRepeats);

  const std::string recall_head = "recall@" + std::to_string(std::min(s.k, kRecallDepth));
  std::printf("\n%-*s %-20s %7s %12s %12s %9s %10s\n", index_width(s), "index", "params", "batch",
              "search_s", "QPS", recall_head.c_str(), "build_s");
  Bench bench(built.index, queries, *gt, s);
  for (const SweepPoint &point : sweep) {
    std::vector<BenchRow> rows{bench.throughput(point)};
    if (o.has("latency"))
      for (int64_t batch : kLatencyBatches)
        if (batch < s.nq) rows.push_back(bench.latency(point, batch));  // batch nq is the throughput row
    for (const BenchRow &r : rows) {
      print_row(s, r);
      if (json) json << bench_json(s, r, command).str() << "\n" << std::flush;
    }
    std::fflush(stdout);
  }
  if (json && !json.good()) throw Failure(*json_path + ": write failed");
  if (json_path)
    std::printf("\nJSON lines appended to %s (plot: python3 bench/plot_curves.py %s)\n",
                json_path->c_str(), json_path->c_str());
  return 0;
}

}  // namespace qvtool
