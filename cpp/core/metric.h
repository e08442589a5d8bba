// Metrics and their conventions: which way is closer, and the padding distance of a missing result.
#pragma once

#include <cstdint>
#include <limits>

namespace quiver {

// Values are the C ABI's QV_METRIC_* codes and are stored in files; never renumber.
enum class Metric : int32_t { l2 = 0, inner_product = 1, cosine = 2, l1 = 3, linf = 4, edit = 5 };

// The metrics of the dot-product (GEMM) engines: Flat, IVF and graph kinds, qv_knn, k-means.
inline bool is_valid_metric(int32_t m) { return m >= 0 && m <= 2; }

// Every metric an index can be created with: also L1 and L-infinity over float vectors and edit
// distance over byte strings, which the metric-space kinds (cpp/metric/) serve.
inline bool is_known_metric(int32_t m) { return m >= 0 && m <= 5; }

// Metrics that obey the triangle inequality (L2 through its square root), as List of Clusters and
// SSS need; inner product and cosine do not.
inline bool is_true_metric(Metric m) { return m != Metric::inner_product && m != Metric::cosine; }

// Edit distance indexes hold byte strings; every other metric holds float vectors.
inline bool holds_strings(Metric m) { return m == Metric::edit; }

// L2, L1, L-infinity and edit distance are distances (smaller is closer); inner product and cosine
// are similarities.
inline bool larger_is_closer(Metric m) { return m == Metric::inner_product || m == Metric::cosine; }

inline float missing_distance(Metric m) {
  return larger_is_closer(m) ? -std::numeric_limits<float>::infinity()
                             : std::numeric_limits<float>::infinity();
}

inline const char* metric_name(Metric m) {
  switch (m) {
    case Metric::l2: return "L2";
    case Metric::inner_product: return "inner product";
    case Metric::cosine: return "cosine";
    case Metric::l1: return "L1";
    case Metric::linf: return "L-infinity";
    case Metric::edit: return "edit distance";
  }
  return "unknown";
}

}  // namespace quiver
