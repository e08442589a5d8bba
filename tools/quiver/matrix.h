// Row-major matrices the tool moves between files and the library: float vectors and integer ids.
#pragma once

#include <cstdint>
#include <vector>

namespace qvtool {

template <typename T>
struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<T> data;  // rows * cols, row-major

  const T *row(int64_t i) const { return data.data() + i * cols; }
  T *row(int64_t i) { return data.data() + i * cols; }
  bool empty() const { return rows == 0; }

  // Keeps only the first n rows (no-op when n >= rows).
  void truncate_rows(int64_t n) {
    if (n >= rows) return;
    rows = n;
    data.resize(static_cast<size_t>(rows * cols));
  }
};

using FloatMatrix = Matrix<float>;
using IdMatrix = Matrix<int64_t>;  // neighbour ids; -1 where a result is missing

// No cap on the rows read from a file.
constexpr int64_t kAllRows = INT64_MAX;

}  // namespace qvtool
