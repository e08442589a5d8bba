// quiver knn-graph: the k-nearest-neighbour graph of a vector set (qv_knn_graph); time and recall.
#include <cstdio>
#include <cstring>

#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "errors.h"
#include "json.h"
#include "library.h"
#include "machine.h"
#include "progress.h"
#include "timing.h"
#include "vector_file.h"

namespace qvtool {

namespace {

qv_knn_graph_method_t parse_method(const std::string &text) {
  if (text == "auto") return QV_KNN_GRAPH_AUTO;
  if (text == "exact") return QV_KNN_GRAPH_EXACT;
  if (text == "approximate") return QV_KNN_GRAPH_APPROXIMATE;
  throw UsageError("--method: '" + text + "' is not exact, approximate or auto");
}

// What ran, as far as the results tell: the exact method reports recall 1, the approximate one -1
// without a sample (with one, an estimate that may be 1 too).
const char *method_name(const qv_knn_graph_params_t &p, double recall) {
  if (p.method == QV_KNN_GRAPH_EXACT) return "exact";
  if (p.method == QV_KNN_GRAPH_APPROXIMATE) return "approximate";
  if (recall < 0) return "auto (approximate)";
  if (recall == 1 && p.recall_sample == 0) return "auto (exact)";
  return recall == 1 ? "auto" : "auto (approximate)";
}

}  // namespace

int run_knn_graph(int argc, char **argv) {
  Options o("knn-graph", "--base FILE|DATASET --k K [options]",
            "Builds the k-nearest-neighbour graph of the base vectors (every vector's k nearest other\n"
            "vectors) with qv_knn_graph; prints the time and, for the approximate method with\n"
            "--sample, the recall@k measured against exact neighbours of that many points.",
            {{"base", "FILE|DATASET", "vectors (a DATASET's base set)"},
             {"k", "K", "neighbours per vector (default 32)"},
             {"method", "METHOD", "exact | approximate | auto (default auto)"},
             {"recall", "R", "target recall of the approximate method, in (0, 1] (default 0.95)"},
             {"sample", "N", "points whose exact neighbours measure the recall (default 0: none)"},
             {"seed", "S", "seed of the approximate method (default 1234)"},
             {"metric", "METRIC", "l2 | ip | cosine (default l2)"},
             {"out", "FILE", "write the neighbour ids as .ivecs"},
             {"json", "", "print one JSON object with the results"},
             {"threads", "N", "CPU threads (default: one per core)"},
             {"device", "KIND", "auto | cpu | cuda (default auto)"},
             gpus_option()});
  if (!o.parse(argc, argv, 2)) return 0;
  const DataSource src(o.require("base"));
  const int64_t k = o.get_int("k", 32, 1, QV_MAX_K - 1);
  const qv_metric_t metric = parse_metric(o.get_or("metric", "l2"));
  const std::optional<std::string> out = o.get("out");
  if (out && !ends_with(*out, ".ivecs")) throw UsageError("--out: the graph is written as .ivecs");
  qv_knn_graph_params_t params;
  check(qv_knn_graph_params_init(&params), "qv_knn_graph_params_init");
  params.method = parse_method(o.get_or("method", "auto"));
  const std::string recall_text = o.get_or("recall", "0.95");
  char *end = nullptr;
  params.target_recall = std::strtod(recall_text.c_str(), &end);
  if (end == recall_text.c_str() || *end != '\0' || !(params.target_recall > 0 && params.target_recall <= 1))
    throw UsageError("--recall: '" + recall_text + "' is not a number in (0, 1]");
  params.recall_sample = o.get_int("sample", 0, 0, INT64_MAX);
  params.seed = uint64_t(o.get_int("seed", 1234, 0, INT64_MAX));
  const bool json = o.has("json");
  const qv_device_kind_t device = parse_device(o.get_or("device", "auto"));
  Context ctx(device, int(o.get_int("threads", 0, 0, 4096)), parse_gpus(o.get("gpus"), device));

  Stopwatch load_clock;
  const FloatMatrix base = src.base();
  if (base.rows <= k)
    throw UsageError("--k " + std::to_string(k) + " needs more than k vectors; " + src.name() + " has " +
                     std::to_string(base.rows));
  if (!json)
    std::printf("data: %s  n=%lld d=%lld (loaded in %.2f s), on %s with %d threads\n", src.name().c_str(),
                (long long)base.rows, (long long)base.cols, load_clock.seconds(), ctx.device_name().c_str(),
                ctx.threads());

  IdMatrix ids;
  ids.rows = base.rows;
  ids.cols = k;
  ids.data.resize(size_t(base.rows * k));
  double recall = -1;
  Progress bar("knn-graph", kFractionSteps);
  params.progress = draw_fraction;
  params.user_data = &bar;
  Stopwatch clock;
  check(qv_knn_graph(ctx.get(), metric, base.cols, base.rows, base.data.data(), uint32_t(k), &params, nullptr,
                     ids.data.data(), &recall),
        "building the k-NN graph");
  const double secs = clock.seconds();
  bar.done();

  const char *method = method_name(params, recall);
  if (json) {
    JsonObject machine;
    machine.add("cpu", cpu_model()).add("cores", cpu_cores()).add("device", ctx.device_name())
        .add("threads", ctx.threads());
    JsonObject j;
    j.add("command", command_line(argc, argv)).add("data", src.name()).add("n", base.rows)
        .add("d", base.cols).add("k", k).add("metric", metric_name(metric)).add("method", method)
        .add("target_recall", params.target_recall).add("sample", params.recall_sample)
        .add("seconds", secs).add("machine", machine).add("quiver_version", qv_version_string());
    if (recall >= 0) j.add("recall", recall); else j.add_null("recall");
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("k-NN graph: k=%lld metric=%s method=%s: %.3f s\n", (long long)k, metric_name(metric), method,
                secs);
    if (recall >= 0)
      std::printf("recall@%lld = %.4f  (%s)\n", (long long)k, recall,
                  params.method == QV_KNN_GRAPH_EXACT || (recall == 1 && params.recall_sample == 0)
                      ? "exact"
                      : ("estimated on " + std::to_string(params.recall_sample) + " points").c_str());
    else
      std::printf("recall: not estimated (give --sample N)\n");
  }
  if (out) {
    write_ids(*out, ids);
    if (!json) std::printf("graph written to %s\n", out->c_str());
  }
  return 0;
}

}  // namespace qvtool
