// quiver search: search a saved index with a query set; report time, QPS and recall.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "errors.h"
#include "eval.h"
#include "ivf_params.h"
#include "library.h"
#include "timing.h"
#include "vector_file.h"

namespace qvtool {

// Where the ground truth comes from: --gt, the data set folder, or computed exactly.
static std::optional<IdMatrix> find_ground_truth(const Options &o, const DataSource &src, Context &ctx,
                                                 const qv_index_info_t &info,
                                                 const FloatMatrix &queries, int64_t k,
                                                 std::string &origin) {
  if (auto path = o.get("gt")) {
    origin = *path;
    return read_ids(*path, queries.rows);
  }
  if (auto gt = src.ground_truth(queries.rows)) {
    origin = src.name() + "/gt.ivecs";
    return gt;
  }
  if (!src.is_dataset()) return std::nullopt;  // a lone query file: we do not know the base
  FloatMatrix base = src.base();
  require_dim(base, info.dim, src.name() + " base");
  Stopwatch clock;
  IdMatrix gt = exact_knn(ctx, info.metric, base, queries, std::max<int64_t>(k, 10));
  char buf[96];
  std::snprintf(buf, sizeof buf, "exact qv_knn over %s base (%.2f s)", src.name().c_str(), clock.seconds());
  origin = buf;
  return gt;
}

int run_search(int argc, char **argv) {
  Options o("search", "--index index.qvx --queries FILE|DATASET [options]",
            "Searches every query in one batch; prints time, QPS, and recall@k when ground truth is\n"
            "known (--gt, a `quiver gen` folder's gt.ivecs, or exact qv_knn for fashion-mnist and\n"
            "synth-* names).",
            {{"index", "FILE", "index saved by `quiver build`"},
             {"queries", "FILE|DATASET", "query vectors (a DATASET's query set)"},
             {"k", "K", "neighbours per query (default 10)"},
             {"gt", "FILE", "ground-truth ids (.ivecs or .npy), one row per query"},
             {"nprobe", "N", "inverted-file lists to visit (default: the index's)"},
             {"refine", "F", "re-ranking factor of a \",Refine\" index (default: the index's)"},
             {"out", "FILE", "write result ids as .ivecs"},
             {"threads", "N", "CPU threads (default: one per core)"},
             {"device", "KIND", "auto | cpu | cuda (default auto)"},
             gpus_option()});
  if (!o.parse(argc, argv, 2)) return 0;
  const std::string index_path = o.require("index");
  const DataSource src(o.require("queries"));
  const int64_t k = o.get_int("k", 10, 1, QV_MAX_K);
  const int64_t nprobe = o.get_int("nprobe", 0, 1, UINT32_MAX);  // 0: not given
  const int64_t refine = o.get_int("refine", 0, 0, UINT32_MAX);
  const std::optional<std::string> out = o.get("out");
  if (out && !ends_with(*out, ".ivecs")) throw UsageError("--out: results are written as .ivecs");
  const qv_device_kind_t device = parse_device(o.get_or("device", "auto"));
  Context ctx(device, int(o.get_int("threads", 0, 0, 4096)), parse_gpus(o.get("gpus"), device));

  Index index = Index::load(ctx, index_path);
  const qv_index_info_t info = index.info();
  if (refine && !descriptor_has_refine(info.descriptor))
    throw UsageError("--refine: the index \"" + std::string(info.descriptor) +
                     "\" has no ,Refine component to re-rank with");
  FloatMatrix queries = src.queries();
  require_dim(queries, info.dim, "the query set " + src.name());
  std::printf("index: %s \"%s\" metric=%s, %lld vectors, on %s\n", index_path.c_str(),
              info.descriptor, metric_name(info.metric), (long long)info.count,
              ctx.device_name().c_str());

  qv_search_params_t params;
  check(qv_search_params_init(&params), "qv_search_params_init");
  if (nprobe) params.nprobe = uint32_t(nprobe);  // else QV_NPROBE_DEFAULT from _init
  params.refine_factor = uint32_t(refine);
  IdMatrix ids;
  ids.rows = queries.rows;
  ids.cols = k;
  ids.data.resize(size_t(ids.rows * k));
  std::vector<float> dist(ids.data.size());
  Stopwatch clock;
  check(qv_index_search(index.get(), queries.rows, queries.data.data(), uint32_t(k), &params,
                        dist.data(), ids.data.data()),
        "searching");
  const double secs = clock.seconds();
  std::printf("searched %lld queries, k=%lld: %.4f s, %.0f QPS (one batch, one run; use `quiver "
              "bench` for the median of repeats)\n",
              (long long)queries.rows, (long long)k, secs, double(queries.rows) / secs);

  std::string origin;
  if (auto gt = find_ground_truth(o, src, ctx, info, queries, k, origin)) {
    if (gt->rows < queries.rows)
      throw UsageError("ground truth has " + std::to_string(gt->rows) + " rows for " +
                       std::to_string(queries.rows) + " queries");
    const int64_t r = std::min(k, gt->cols);
    std::printf("recall@%lld = %.4f  (ground truth: %s)\n", (long long)r, recall_at(ids, *gt, r),
                origin.c_str());
    if (r > 10) std::printf("recall@10 = %.4f\n", recall_at(ids, *gt, 10));
  } else {
    std::printf("recall: no ground truth (give --gt FILE)\n");
  }
  if (out) {
    write_ids(*out, ids);
    std::printf("result ids written to %s\n", out->c_str());
  }
  return 0;
}

}  // namespace qvtool
