// Picks the reader for a vector or id file from its name, so every subcommand accepts the same formats.
#pragma once

#include <string>

#include "matrix.h"

namespace qvtool {

// .fvecs, .bvecs, .npy, or IDX (names ending in .gz, -ubyte or .idx*). Throws UsageError for an
// unknown extension and Failure for an unreadable or corrupt file.
FloatMatrix read_vectors(const std::string &path, int64_t max_rows = kAllRows);

// Neighbour ids: .ivecs or an integer .npy.
IdMatrix read_ids(const std::string &path, int64_t max_rows = kAllRows);

// Writes ids as .ivecs (int32); the only output format the tool needs.
void write_ids(const std::string &path, const IdMatrix &ids);

bool ends_with(const std::string &s, const std::string &suffix);

}  // namespace qvtool
