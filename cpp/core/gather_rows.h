// Rows picked out of a row-major matrix into a new one (samples, the points a search is made for).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace quiver {

// Rows `rows` of x (dim floats each) side by side, in that order.
inline std::vector<float> gather_rows(const float* x, int64_t dim, const std::vector<int64_t>& rows) {
  std::vector<float> out(rows.size() * static_cast<size_t>(dim));
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(&out[i * dim], x + rows[i] * dim, sizeof(float) * static_cast<size_t>(dim));
  return out;
}

}  // namespace quiver
