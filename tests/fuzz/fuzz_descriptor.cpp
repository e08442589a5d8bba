// qv_index_create with an arbitrary descriptor (seeds: tests/fuzz/corpus/fuzz_descriptor, one file a
// known form). The first two bytes choose dim and metric, the rest is the descriptor, cut at a NUL.
#include <cstdint>
#include <string>

#include "fuzz_context.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const qv_metric_t metric = static_cast<qv_metric_t>(data[1] % 7);  // 6: an invalid metric
  // 1 .. 64: small dims keep each create cheap; edit distance indexes hold strings (dim 0).
  const int64_t dim = metric == QV_METRIC_EDIT ? 0 : 1 + data[0] % 64;
  const std::string descriptor(reinterpret_cast<const char*>(data + 2), size - 2);  // c_str() cuts at a NUL
  qv_index_t* index = nullptr;
  if (qv_index_create(qvfuzz::cpu_context(), descriptor.c_str(), dim, metric, &index) != QV_OK) {
    if (index != nullptr) __builtin_trap();
    return 0;
  }
  qv_index_info_t info;
  qv_index_info_init(&info);
  if (qv_index_info(index, &info) != QV_OK || info.dim != dim) __builtin_trap();
  qv_index_free(index);
  return 0;
}
