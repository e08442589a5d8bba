#include "cpp/multi/object_rows.h"

#include <algorithm>

namespace quiver {

Objects slice_rows(const Objects& x, int64_t begin, int64_t count) {
  Objects part = x;
  part.n = count;
  if (x.are_strings()) {
    part.strings.n = count;
    part.strings.offsets = x.strings.offsets + begin;
  } else {
    part.vectors = x.vectors + begin * x.dim;
  }
  return part;
}

GatheredRows gather_rows(const Objects& x, const std::vector<int64_t>& rows) {
  GatheredRows out;
  const int64_t n = static_cast<int64_t>(rows.size());
  if (!x.are_strings()) {
    out.vectors.resize(static_cast<size_t>(n * x.dim));
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(x.vector(rows[i]), x.dim, out.vectors.begin() + i * x.dim);
    out.objects = Objects::of_vectors(n, x.dim, out.vectors.data());
    return out;
  }
  out.offsets.push_back(0);
  for (const int64_t row : rows) {
    out.bytes.insert(out.bytes.end(), x.strings.data(row), x.strings.data(row) + x.strings.length(row));
    out.offsets.push_back(static_cast<int64_t>(out.bytes.size()));
  }
  out.objects = Objects::of_strings(Strings{n, out.offsets.data(), out.bytes.data()});
  return out;
}

}  // namespace quiver
