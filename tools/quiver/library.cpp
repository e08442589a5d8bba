#include "library.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "errors.h"

namespace qvtool {

void check(qv_status_t status, const std::string &what) {
  if (status == QV_OK) return;
  // Copy the message at once: the next quiver call on this thread replaces it.
  std::string msg = qv_last_error_message();
  throw Failure(what + ": " + qv_status_string(status) + (msg.empty() ? "" : ": " + msg));
}

qv_metric_t parse_metric(const std::string &text) {
  if (text == "l2") return QV_METRIC_L2;
  if (text == "ip") return QV_METRIC_INNER_PRODUCT;
  if (text == "cosine") return QV_METRIC_COSINE;
  throw UsageError("--metric: '" + text + "' is not one of l2, ip, cosine");
}

const char *metric_name(qv_metric_t metric) {
  switch (metric) {
    case QV_METRIC_L2: return "l2";
    case QV_METRIC_INNER_PRODUCT: return "ip";
    case QV_METRIC_COSINE: return "cosine";
    default: return "unknown";
  }
}

qv_device_kind_t parse_device(const std::string &text) {
  if (text == "auto") return QV_DEVICE_AUTO;
  if (text == "cpu") return QV_DEVICE_CPU;
  if (text == "cuda") return QV_DEVICE_CUDA;
  throw UsageError("--device: '" + text + "' is not one of auto, cpu, cuda");
}

qv_compute_mode_t parse_compute_mode(const std::string &text) {
  if (text == "fp32") return QV_COMPUTE_FP32;
  if (text == "tf32") return QV_COMPUTE_TF32;
  if (text == "fp16") return QV_COMPUTE_FP16;
  if (text == "bf16") return QV_COMPUTE_BF16;
  throw UsageError("--mode: '" + text + "' is not one of fp32, tf32, fp16, bf16");
}

// "0,1,3".
static std::string join_ids(const std::vector<int32_t> &ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out;
}

std::string GpuList::text() const { return all ? "all" : join_ids(ids); }

// CUDA devices on a CPU context: the library refuses them; say so in the tool's terms.
static void check_gpus_device(const GpuList &gpus, qv_device_kind_t device) {
  if (gpus.given() && device == QV_DEVICE_CPU)
    throw UsageError("--gpus " + gpus.text() + ": CUDA devices need --device cuda or auto, not --device cpu");
}

GpuList parse_gpus(const std::optional<std::string> &text, qv_device_kind_t device) {
  GpuList gpus;
  if (!text) return gpus;
  if (*text == "all") {
    gpus.all = true;
    check_gpus_device(gpus, device);
    return gpus;
  }
  const std::string bad = "--gpus: '" + *text + "' is not 'all' or a list of CUDA device ordinals >= 0, e.g. 0,1,3";
  size_t start = 0;
  while (start <= text->size()) {
    size_t comma = text->find(',', start);
    if (comma == std::string::npos) comma = text->size();
    const std::string item = text->substr(start, comma - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) throw UsageError(bad);
    gpus.ids.push_back(int32_t(parse_int(item, "--gpus", 0, INT32_MAX)));
    start = comma + 1;
  }
  if (gpus.ids.size() > size_t(QV_MAX_DEVICES))
    throw UsageError("--gpus: " + std::to_string(gpus.ids.size()) + " devices, more than " +
                     std::to_string(QV_MAX_DEVICES) + " (QV_MAX_DEVICES)");
  check_gpus_device(gpus, device);
  return gpus;
}

OptionSpec gpus_option() {
  return {"gpus", "LIST", "CUDA devices (cuda | auto): all | ordinals like 0,1,3; a repeat shares a GPU "
                          "(default: device 0 alone)"};
}

Context::Context(qv_device_kind_t device, int threads, const GpuList &gpus) {
  check_gpus_device(gpus, device);
  qv_context_options_t opts;
  check(qv_context_options_init(&opts), "qv_context_options_init");
  opts.device = device;
  opts.cpu_threads = threads;
  if (gpus.all) {
    opts.device_count = QV_ALL_DEVICES;
  } else {
    opts.device_count = int32_t(gpus.ids.size());
    std::copy(gpus.ids.begin(), gpus.ids.end(), opts.device_ids);
  }
  const qv_status_t s = qv_context_create(&opts, &ctx_);
  if (s == QV_ERR_INVALID_ARGUMENT && gpus.given()) {
    // Options the library rejects are the user's input: report them as bad usage.
    std::string msg = qv_last_error_message();
    throw UsageError("--gpus " + gpus.text() + ": " + qv_status_string(s) + ": " + msg);
  }
  check(s, gpus.given() ? "creating the quiver context on --gpus " + gpus.text() : "creating the quiver context");
  threads_ = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  if (gpus.given() && !on_cuda())  // --device auto without a usable GPU runs on the CPU
    std::fprintf(stderr, "quiver: note: --gpus %s: no usable CUDA device, running on the CPU\n",
                 gpus.text().c_str());
}

bool Context::on_cuda() const {
  qv_device_kind_t kind = QV_DEVICE_CPU;
  check(qv_context_device(ctx_, &kind, nullptr), "qv_context_device");
  return kind == QV_DEVICE_CUDA;
}

std::vector<int32_t> Context::device_ids() const {
  int32_t count = 0;
  check(qv_context_devices(ctx_, nullptr, 0, &count), "qv_context_devices");
  std::vector<int32_t> ids(size_t(std::max(count, 0)));
  if (!ids.empty()) {
    check(qv_context_devices(ctx_, ids.data(), int32_t(ids.size()), &count), "qv_context_devices");
    ids.resize(size_t(std::min<int32_t>(count, int32_t(ids.size()))));
  }
  return ids;
}

std::string Context::device_name() const {
  qv_device_kind_t kind = QV_DEVICE_CPU;
  int32_t id = -1;
  check(qv_context_device(ctx_, &kind, &id), "qv_context_device");
  if (kind != QV_DEVICE_CUDA) return "cpu";
  std::vector<int32_t> ids = device_ids();
  if (ids.empty()) ids.push_back(id);
  return "cuda:" + join_ids(ids);
}

Index Index::create(Context &ctx, const std::string &descriptor, int64_t dim, qv_metric_t metric) {
  qv_index_t *idx = nullptr;
  qv_status_t s = qv_index_create(ctx.get(), descriptor.c_str(), dim, metric, &idx);
  if (s == QV_ERR_INVALID_ARGUMENT) {
    // A descriptor the library rejects is the user's input: report it as bad usage.
    std::string msg = qv_last_error_message();
    throw UsageError("--index \"" + descriptor + "\": " + qv_status_string(s) + ": " + msg);
  }
  check(s, "creating index \"" + descriptor + "\"");
  return Index(idx);
}

Index Index::load(Context &ctx, const std::string &path) {
  qv_index_t *idx = nullptr;
  check(qv_index_load(ctx.get(), path.c_str(), &idx), "loading index " + path);
  return Index(idx);
}

qv_index_info_t Index::info() const {
  qv_index_info_t info;
  check(qv_index_info_init(&info), "qv_index_info_init");
  check(qv_index_info(idx_, &info), "qv_index_info");
  return info;
}

}  // namespace qvtool
