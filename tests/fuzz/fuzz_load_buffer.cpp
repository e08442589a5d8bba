// qv_index_load_buffer on arbitrary bytes (seeds: tests/fuzz/corpus/fuzz_load_buffer, a saved index of
// every kind). A load either fails with a status or gives an index that searches, reports and frees
// cleanly, and whose saved bytes load again and save to the same bytes (a round trip loses nothing);
// sanitizers catch any read outside the data, leak or undefined behaviour on the way. Some inputs
// also go through files (qv_index_save / qv_index_load), and the file errors are tried once.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_context.h"

namespace {

// Queries wider than this are not worth the time: the index's dim comes from the fuzzed bytes.
constexpr int64_t kMaxSearchDim = 4096;
constexpr uint32_t kK = 3;
// One input in this many (by size, so a run is repeatable) is also saved to and loaded from a file.
constexpr size_t kFileEvery = 64;

std::string scratch_path() { return "/tmp/quiver-fuzz-" + std::to_string(::getpid()) + ".qv"; }

// The file paths' errors, once: a missing file, a directory, a file in a missing folder.
void try_file_errors(qv_index_t* index) {
  static bool done = false;
  if (done) return;
  done = true;
  qv_index_t* out = nullptr;
  if (qv_index_load(qvfuzz::cpu_context(), "/nonexistent/quiver-fuzz.qv", &out) == QV_OK) std::abort();
  if (qv_index_load(qvfuzz::cpu_context(), "/tmp", &out) == QV_OK) std::abort();
  if (qv_index_save(index, "/nonexistent/quiver-fuzz.qv") == QV_OK) std::abort();
}

// saved (an index's bytes) loads again, through a file when asked, and saves to the same bytes.
void check_round_trip(const void* saved, size_t saved_size, bool through_file) {
  qv_index_t* again = nullptr;
  if (through_file) {
    const std::string path = scratch_path();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return;  // no scratch space: nothing to check here
    const bool written = std::fwrite(saved, 1, saved_size, f) == saved_size;
    std::fclose(f);
    if (written && qv_index_load(qvfuzz::cpu_context(), path.c_str(), &again) != QV_OK) std::abort();
    if (again != nullptr && qv_index_save(again, path.c_str()) != QV_OK) std::abort();
    std::remove(path.c_str());
  } else if (qv_index_load_buffer(qvfuzz::cpu_context(), saved, saved_size, &again) != QV_OK) {
    std::abort();  // what quiver saved, quiver loads
  }
  if (again == nullptr) return;
  void* resaved = nullptr;
  size_t resaved_size = 0;
  if (qv_index_save_buffer(again, &resaved, &resaved_size) != QV_OK) std::abort();
  if (resaved_size != saved_size || std::memcmp(resaved, saved, saved_size) != 0) std::abort();
  qv_buffer_free(resaved);
  qv_index_free(again);
}

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
  if (qv_index_save_buffer(index, &saved, &saved_size) == QV_OK) {
    check_round_trip(saved, saved_size, size % kFileEvery == 0);
    qv_buffer_free(saved);
  }
  try_file_errors(index);
  qv_index_free(index);
  return 0;
}
