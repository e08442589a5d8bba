#include "vector_file.h"

#include "errors.h"
#include "idx_io.h"
#include "npy_io.h"
#include "texmex_io.h"

namespace qvtool {

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static bool is_idx_name(const std::string &path) {
  return ends_with(path, ".gz") || ends_with(path, "-ubyte") || path.find(".idx") != std::string::npos;
}

FloatMatrix read_vectors(const std::string &path, int64_t max_rows) {
  if (ends_with(path, ".fvecs")) return read_fvecs(path, max_rows);
  if (ends_with(path, ".bvecs")) return read_bvecs(path, max_rows);
  if (ends_with(path, ".npy")) return read_npy_vectors(path, max_rows);
  if (is_idx_name(path)) return read_idx_ubyte(path, max_rows);
  throw UsageError(path + ": unknown vector file type (expected .fvecs, .bvecs, .npy, or an IDX "
                          "file ending in .gz or -ubyte)");
}

IdMatrix read_ids(const std::string &path, int64_t max_rows) {
  if (ends_with(path, ".ivecs")) return read_ivecs(path, max_rows);
  if (ends_with(path, ".npy")) return read_npy_ids(path, max_rows);
  throw UsageError(path + ": unknown id file type (expected .ivecs or .npy)");
}

void write_ids(const std::string &path, const IdMatrix &ids) {
  if (!ends_with(path, ".ivecs")) throw UsageError(path + ": results are written as .ivecs");
  write_ivecs(path, ids);
}

}  // namespace qvtool
