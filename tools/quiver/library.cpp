#include "library.h"

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

Context::Context(qv_device_kind_t device, int threads) {
  qv_context_options_t opts;
  check(qv_context_options_init(&opts), "qv_context_options_init");
  opts.device = device;
  opts.cpu_threads = threads;
  check(qv_context_create(&opts, &ctx_), "creating the quiver context");
  threads_ = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

bool Context::on_cuda() const {
  qv_device_kind_t kind = QV_DEVICE_CPU;
  check(qv_context_device(ctx_, &kind, nullptr), "qv_context_device");
  return kind == QV_DEVICE_CUDA;
}

std::string Context::device_name() const {
  qv_device_kind_t kind = QV_DEVICE_CPU;
  int32_t id = -1;
  check(qv_context_device(ctx_, &kind, &id), "qv_context_device");
  return kind == QV_DEVICE_CUDA ? "cuda:" + std::to_string(id) : "cpu";
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
