// The tool's thin layer over the public C API: owning handles, status checks that carry the library's
// message, and the option values (--metric, --device, --gpus, --threads) every subcommand shares.
#pragma once

#include <quiver/quiver.h>

#include <optional>
#include <string>
#include <vector>

#include "cli.h"

namespace qvtool {

// Throws Failure("<what>: QV_ERR_...: <qv_last_error_message()>") unless status is QV_OK.
void check(qv_status_t status, const std::string &what);

qv_metric_t parse_metric(const std::string &text);   // l2 | ip | cosine; UsageError otherwise
const char *metric_name(qv_metric_t metric);
qv_device_kind_t parse_device(const std::string &text);  // auto | cpu | cuda
qv_compute_mode_t parse_compute_mode(const std::string &text);  // fp32 | tf32 | fp16 | bf16

// The CUDA devices of --gpus: not given (the context's one default device, as without the option),
// every visible device, or ordinals in order (a repeated ordinal is one more logical device on that GPU).
struct GpuList {
  bool all = false;
  std::vector<int32_t> ids;
  bool given() const { return all || !ids.empty(); }
  std::string text() const;  // "all" or "0,1,3"; empty when not given
};
// --gpus: "all" or ORD[,ORD...] with ORD >= 0, at most QV_MAX_DEVICES of them; std::nullopt (the option
// absent) gives an empty list. UsageError naming --gpus otherwise, or for a list with --device cpu
// (device: the --device value, checked here so a command fails before any work).
GpuList parse_gpus(const std::optional<std::string> &text, qv_device_kind_t device);
// The --gpus entry of a command's option table: one help text for every command.
OptionSpec gpus_option();

class Context {
 public:
  // threads: 0 = one per core (the library's default). gpus: the devices of a CUDA (or auto) context;
  // with --device cpu a UsageError.
  Context(qv_device_kind_t device, int threads, const GpuList &gpus = GpuList());
  ~Context() { qv_context_free(ctx_); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  qv_context_t *get() const { return ctx_; }
  // "cpu", "cuda:<ordinal>", or "cuda:0,1,2,3" for a context of several devices.
  std::string device_name() const;
  bool on_cuda() const;
  // The CUDA ordinals of the context's devices, in order (qv_context_devices); empty on the CPU.
  std::vector<int32_t> device_ids() const;
  int threads() const { return threads_; }  // the resolved count, never 0

 private:
  qv_context_t *ctx_ = nullptr;
  int threads_;
};

class Index {
 public:
  Index() = default;
  explicit Index(qv_index_t *idx) : idx_(idx) {}
  ~Index() { qv_index_free(idx_); }
  Index(Index &&o) noexcept : idx_(o.idx_) { o.idx_ = nullptr; }
  Index &operator=(Index &&o) noexcept {
    std::swap(idx_, o.idx_);
    return *this;
  }

  static Index create(Context &ctx, const std::string &descriptor, int64_t dim, qv_metric_t metric);
  static Index load(Context &ctx, const std::string &path);

  qv_index_t *get() const { return idx_; }
  qv_index_info_t info() const;

 private:
  qv_index_t *idx_ = nullptr;
};

}  // namespace qvtool
