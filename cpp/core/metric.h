// Metrics and their conventions: which way is closer, and the padding distance of a missing result.
#pragma once

#include <cstdint>
#include <limits>

namespace quiver {

enum class Metric : int32_t { l2 = 0, inner_product = 1, cosine = 2 };

inline bool is_valid_metric(int32_t m) { return m >= 0 && m <= 2; }

// L2 is a distance (smaller is closer); inner product and cosine are similarities.
inline bool larger_is_closer(Metric m) { return m != Metric::l2; }

inline float missing_distance(Metric m) {
  return larger_is_closer(m) ? -std::numeric_limits<float>::infinity()
                             : std::numeric_limits<float>::infinity();
}

inline const char* metric_name(Metric m) {
  switch (m) {
    case Metric::l2: return "L2";
    case Metric::inner_product: return "inner product";
    case Metric::cosine: return "cosine";
  }
  return "unknown";
}

}  // namespace quiver
