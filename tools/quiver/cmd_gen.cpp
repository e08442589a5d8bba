// quiver gen: writes a synthetic data set (BENCHMARKS.md recipe) and its exact top-100 ground truth.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli.h"
#include "commands.h"
#include "errors.h"
#include "eval.h"
#include "json.h"
#include "library.h"
#include "synth.h"
#include "texmex_io.h"
#include "timing.h"

namespace qvtool {

// Depth of the ground truth gen writes: enough for recall@1..100.
constexpr int64_t kGroundTruthDepth = 100;

int run_gen(int argc, char **argv) {
  Options o("gen", "--dataset NAME | --n N --d D  --out DIR [options]",
            "Generates clustered synthetic vectors (BENCHMARKS.md recipe), deterministic for a seed on\n"
            "every machine, and writes DIR/base.fvecs, DIR/query.fvecs, DIR/gt.ivecs (exact top-100\n"
            "L2 neighbours computed with qv_knn) and DIR/info.json.",
            {{"dataset", "NAME", "synth-100k-128 | synth-1m-128 | synth-10m-96"},
             {"n", "N", "base vectors (overrides the data set's)"},
             {"d", "D", "dimension (overrides the data set's)"},
             {"nq", "Q", "query vectors (default 10000)"},
             {"seed", "S", "seed (default 1); queries use a stream derived from it"},
             {"out", "DIR", "output folder (created if missing)"},
             {"threads", "N", "CPU threads for the ground truth (default: one per core)"},
             {"device", "KIND", "auto | cpu | cuda for the ground truth (default auto)"},
             gpus_option()});
  if (!o.parse(argc, argv, 2)) return 0;

  SynthSpec spec;
  if (auto name = o.get("dataset")) {
    auto s = synth_spec_by_name(*name);
    if (!s) throw UsageError("--dataset: '" + *name + "' is not synth-100k-128, synth-1m-128 or synth-10m-96");
    spec = *s;
  } else if (!o.has("n") || !o.has("d")) {
    throw UsageError("quiver gen: give --dataset NAME, or --n and --d (see --help)");
  } else {
    spec.name = "synth-custom";
  }
  spec.n = o.get_int("n", spec.n, 1, int64_t(1) << 40);
  spec.d = o.get_int("d", spec.d, 1, 65536);
  spec.nq = o.get_int("nq", spec.nq, 1, int64_t(1) << 32);
  spec.seed = uint64_t(o.get_int("seed", int64_t(spec.seed), 0, INT64_MAX));
  const std::string out = o.require("out");
  const int threads = int(o.get_int("threads", 0, 0, 4096));
  const qv_device_kind_t device = parse_device(o.get_or("device", "auto"));
  const GpuList gpus = parse_gpus(o.get("gpus"), device);

  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw Failure(out + ": cannot create folder: " + ec.message());

  std::printf("generating %s: n=%lld d=%lld nq=%lld seed=%llu -> %s\n", spec.name.c_str(),
              (long long)spec.n, (long long)spec.d, (long long)spec.nq,
              (unsigned long long)spec.seed, out.c_str());
  Stopwatch gen_clock;
  FloatMatrix base = synth_generate(spec, SynthPart::Base);
  FloatMatrix queries = synth_generate(spec, SynthPart::Queries);
  write_fvecs(out + "/base.fvecs", base);
  write_fvecs(out + "/query.fvecs", queries);
  std::printf("  vectors written in %.2f s\n", gen_clock.seconds());

  Context ctx(device, threads, gpus);
  Stopwatch gt_clock;
  const int64_t depth = std::min(kGroundTruthDepth, spec.n);
  IdMatrix gt = exact_knn(ctx, QV_METRIC_L2, base, queries, depth);
  write_ivecs(out + "/gt.ivecs", gt);
  std::printf("  exact top-%lld ground truth on %s in %.2f s\n", (long long)depth,
              ctx.device_name().c_str(), gt_clock.seconds());

  // Provenance, so a folder found later says how to make it again.
  JsonObject info;
  info.add("recipe", "BENCHMARKS.md synthetic").add("name", spec.name).add("n", spec.n)
      .add("d", spec.d).add("nq", spec.nq).add("seed", std::to_string(spec.seed))
      .add("gt_k", depth).add("gt_metric", "l2").add("quiver_version", qv_version_string());
  std::ofstream(out + "/info.json") << info.str() << "\n";
  return 0;
}

}  // namespace qvtool
