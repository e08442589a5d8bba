#include "bench_common.h"

#include <ctime>

#include "errors.h"
#include "ivf_params.h"
#include "library.h"
#include "machine.h"

namespace qvtool {

std::string point_label(const SweepPoint &p) {
  std::string out;
  if (p.nprobe) out = "nprobe=" + std::to_string(p.nprobe);
  if (p.refine) out += (out.empty() ? "" : ",") + std::string("refine=") + std::to_string(p.refine);
  if (p.width) out += (out.empty() ? "" : ",") + std::string("width=") + std::to_string(p.width);
  return out;
}

qv_search_params_t search_params(const SweepPoint &point, const std::string &mode) {
  qv_search_params_t p;
  check(qv_search_params_init(&p), "qv_search_params_init");
  if (point.nprobe) p.nprobe = uint32_t(point.nprobe);  // else QV_NPROBE_DEFAULT from _init
  p.refine_factor = uint32_t(point.refine);
  p.search_width = uint32_t(point.width);
  p.compute_mode = parse_compute_mode(mode);
  return p;
}

std::vector<SweepPoint> sweep_points(const Options &o, const std::string &descriptor) {
  const int64_t nlist = descriptor_nlist(descriptor);
  std::vector<int64_t> nprobes = o.get_int_list("nprobe", 1, UINT32_MAX);
  if (nprobes.empty()) nprobes = default_nprobe_sweep(nlist);
  for (int64_t p : nprobes)
    if (nlist && p > nlist)
      throw UsageError("--nprobe: " + std::to_string(p) + " is above nlist = " +
                       std::to_string(nlist) + " of \"" + descriptor + "\"");
  std::vector<int64_t> refines = o.get_int_list("refine", 1, UINT32_MAX);
  // The library ignores the factor elsewhere; rows labelled with it would mislead.
  if (!refines.empty() && !descriptor_has_refine(descriptor))
    throw UsageError("--refine: \"" + descriptor + "\" has no ,Refine component to re-rank with");
  if (refines.empty()) refines.push_back(0);
  std::vector<int64_t> widths = o.get_int_list("width", 1, UINT32_MAX);
  if (!widths.empty() && descriptor_kind(descriptor).rfind("Graph", 0) != 0)
    throw UsageError("--width: \"" + descriptor + "\" is not a graph index");
  if (widths.empty()) widths.push_back(0);
  std::vector<SweepPoint> points;
  for (int64_t refine : refines)
    for (int64_t nprobe : nprobes)
      for (int64_t width : widths) points.push_back({nprobe, refine, width});
  return points;
}

static std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

JsonObject bench_json(const BenchSetup &s, const BenchRow &r, const std::string &command) {
  JsonObject params;
  if (r.point.nprobe) params.add("nprobe", r.point.nprobe);
  if (r.point.refine) params.add("refine", r.point.refine);
  if (r.point.width) params.add("search_width", r.point.width);
  if (s.mode != "fp32") params.add("compute_mode", s.mode);
  JsonObject machine;
  machine.add("cpu", cpu_model()).add("cores", cpu_cores()).add("load1", load_average());
  if (!s.gpu.empty()) machine.add("gpu", s.gpu);
  JsonObject j;
  j.add("dataset", s.dataset).add("n", s.n).add("d", s.d).add("nq", s.nq).add("k", s.k)
      .add("metric", metric_name(s.metric)).add("index", s.descriptor).add("params", params)
      .add("device", s.device).add("threads", s.threads).add("batch", r.batch)
      .add("build_s", s.build_s()).add("train_s", s.train_s).add("add_s", s.add_s)
      .add("ntrain", s.ntrain);
  if (s.host_bytes >= 0) j.add("index_host_bytes", s.host_bytes);
  if (s.device_bytes >= 0) j.add("index_device_bytes", s.device_bytes);
  j.add("search_s", r.search_s).add("qps", double(r.batch) / r.search_s)
      .add("recall10", r.recall10).add("recall_at_k", r.recall_k).add("repeats", r.runs)
      .add("machine", machine).add("quiver_version", qv_version_string())
      .add("command", command).add("time", utc_now());
  if (r.batch < s.nq) j.add("latency_ms", r.search_s * 1e3);
  return j;
}

}  // namespace qvtool
