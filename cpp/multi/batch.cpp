#include "cpp/multi/batch.h"

#include <algorithm>

namespace quiver {

Batch Batch::slice(int64_t begin, int64_t count) const {
  Batch part = *this;
  part.n = count;
  if (dim > 0) {
    part.vectors = vectors + begin * dim;
  } else {
    part.strings.n = count;
    part.strings.offsets = strings.offsets + begin;
  }
  return part;
}

GatheredBatch gather(const Batch& x, const std::vector<int64_t>& rows) {
  GatheredBatch out;
  const int64_t n = static_cast<int64_t>(rows.size());
  if (x.dim > 0) {
    out.vectors.resize(static_cast<size_t>(n * x.dim));
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(x.vectors + rows[i] * x.dim, x.dim, out.vectors.begin() + i * x.dim);
    out.batch = Batch::of_vectors(n, out.vectors.data(), x.dim);
    return out;
  }
  out.offsets.push_back(0);
  for (const int64_t row : rows) {
    out.bytes.insert(out.bytes.end(), x.strings.data(row), x.strings.data(row) + x.strings.length(row));
    out.offsets.push_back(static_cast<int64_t>(out.bytes.size()));
  }
  out.batch = Batch::of_strings(Strings{n, out.offsets.data(), out.bytes.data()});
  return out;
}

}  // namespace quiver
