// qv_index_load_buffer on arbitrary bytes (seeds: tests/fuzz/corpus/fuzz_load_buffer, a saved index of
// every kind). A load either fails with a status or gives an index that searches, reports and frees
// cleanly; sanitizers catch any read outside the data, leak or undefined behaviour on the way.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz_context.h"

namespace {

// Queries wider than this are not worth the time: the index's dim comes from the fuzzed bytes.
constexpr int64_t kMaxSearchDim = 4096;
constexpr uint32_t kK = 3;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qv_index_t* index = nullptr;
  if (qv_index_load_buffer(qvfuzz::cpu_context(), data, size, &index) != QV_OK) {
    if (index != nullptr) std::abort();  // *out must stay unset on failure
    return 0;
  }
  qv_index_info_t info;
  qv_index_info_init(&info);
  if (qv_index_info(index, &info) != QV_OK) std::abort();
  if (info.dim >= 1 && info.dim <= kMaxSearchDim && info.is_trained) {
    std::vector<float> queries(static_cast<size_t>(2 * info.dim));
    for (size_t i = 0; i < queries.size(); ++i) queries[i] = static_cast<float>(i % 7) - 3.0f;
    std::vector<float> distances(2 * kK);
    std::vector<int64_t> ids(2 * kK);
    // Statuses other than QV_OK are fine here (an empty graph says not trained); crashes are not.
    qv_index_search(index, 2, queries.data(), kK, nullptr, distances.data(), ids.data());
  }
  void* saved = nullptr;
  size_t saved_size = 0;
  if (qv_index_save_buffer(index, &saved, &saved_size) == QV_OK) qv_buffer_free(saved);
  qv_index_free(index);
  return 0;
}
