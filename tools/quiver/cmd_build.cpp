// quiver build: train an index on a base set, add the set, save the index file.
#include <cstdio>

#include "cli.h"
#include "commands.h"
#include "dataset.h"
#include "index_build.h"
#include "library.h"
#include "timing.h"

namespace qvtool {

int run_build(int argc, char **argv) {
  Options o("build", "--data FILE|DATASET --out index.qvx [options]",
            "Builds an index over the base vectors (train, then add in chunks) and saves it.\n"
            "DATASET: fashion-mnist, synth-100k-128 | synth-1m-128 | synth-10m-96, or a `quiver gen`\n"
            "folder (its base.fvecs). FILE: .fvecs, .bvecs, .npy, or IDX (.gz / -ubyte).",
            {{"data", "FILE|DATASET", "base vectors"},
             {"index", "DESCRIPTOR", "index descriptor, e.g. \"Flat\" (default Flat), \"IVF1024,Flat\", "
                                     "\"Sharded2,Flat\" (spread over the --gpus devices)"},
             {"metric", "METRIC", "l2 | ip | cosine (default l2)"},
             {"out", "FILE", "where to save the index"},
             {"ntrain", "N", "train on the first N base vectors (default all)"},
             {"threads", "N", "CPU threads (default: one per core)"},
             {"device", "KIND", "auto | cpu | cuda (default auto)"},
             gpus_option()});
  if (!o.parse(argc, argv, 2)) return 0;
  const DataSource src(o.require("data"));
  const std::string descriptor = o.get_or("index", "Flat");
  const qv_metric_t metric = parse_metric(o.get_or("metric", "l2"));
  const std::string out = o.require("out");
  const int64_t ntrain = o.get_int("ntrain", kAllRows, 1, kAllRows);
  const qv_device_kind_t device = parse_device(o.get_or("device", "auto"));
  Context ctx(device, int(o.get_int("threads", 0, 0, 4096)), parse_gpus(o.get("gpus"), device));

  Stopwatch load_clock;
  FloatMatrix base = src.base();
  std::printf("data: %s  n=%lld d=%lld (loaded in %.2f s)\n", src.name().c_str(),
              (long long)base.rows, (long long)base.cols, load_clock.seconds());

  BuiltIndex b = build_index(ctx, descriptor, metric, base, ntrain);
  Stopwatch save_clock;
  check(qv_index_save(b.index.get(), out.c_str()), "saving the index to " + out);
  const qv_index_info_t info = b.index.info();
  std::printf("index: \"%s\" metric=%s on %s, %lld vectors, %.1f MB host, %.1f MB device\n",
              descriptor.c_str(), metric_name(metric), ctx.device_name().c_str(),
              (long long)info.count, double(info.host_bytes) / 1e6, double(info.device_bytes) / 1e6);
  std::printf("build_s=%.3f (train %.3f s, add %.3f s); saved %s in %.2f s\n", b.build_s(),
              b.train_s, b.add_s, out.c_str(), save_clock.seconds());
  return 0;
}

}  // namespace qvtool
