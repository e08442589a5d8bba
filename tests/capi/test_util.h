// Helpers shared by the C API suites: owning handles, random data, a float64 brute-force reference,
// result checkers and a scratch directory. Only quiver.h is used, never the engine's headers.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "quiver/quiver.h"

namespace qvtest {

// ---- owning handles ----------------------------------------------------------------------------

struct ContextFree {
  void operator()(qv_context_t* c) const { qv_context_free(c); }
};
struct IndexFree {
  void operator()(qv_index_t* i) const { qv_index_free(i); }
};
struct RangeResultFree {
  void operator()(qv_range_result_t* r) const { qv_range_result_free(r); }
};
struct BufferFree {
  void operator()(void* p) const { qv_buffer_free(p); }
};
using Context = std::unique_ptr<qv_context_t, ContextFree>;
using Index = std::unique_ptr<qv_index_t, IndexFree>;
using RangeResult = std::unique_ptr<qv_range_result_t, RangeResultFree>;
using Buffer = std::unique_ptr<void, BufferFree>;

// The status and, on failure, the thread's message, so a failed assertion says why.
inline std::string Describe(qv_status_t s) {
  std::string out = qv_status_string(s);
  if (s != QV_OK) out += std::string(": ") + qv_last_error_message();
  return out;
}

#define QV_ASSERT_OK(expr)                                           \
  do {                                                               \
    qv_status_t qv_assert_status_ = (expr);                          \
    ASSERT_EQ(qv_assert_status_, QV_OK)                              \
        << #expr << " -> " << ::qvtest::Describe(qv_assert_status_); \
  } while (0)

#define QV_EXPECT_OK(expr)                                           \
  do {                                                               \
    qv_status_t qv_expect_status_ = (expr);                          \
    EXPECT_EQ(qv_expect_status_, QV_OK)                              \
        << #expr << " -> " << ::qvtest::Describe(qv_expect_status_); \
  } while (0)

// A CPU context with a pool of `threads` threads.
inline Context MakeCpuContext(int32_t threads = 2) {
  qv_context_options_t opts;
  if (qv_context_options_init(&opts) != QV_OK) return Context();
  opts.device = QV_DEVICE_CPU;
  opts.cpu_threads = threads;
  qv_context_t* ctx = nullptr;
  if (qv_context_create(&opts, &ctx) != QV_OK) return Context();
  return Context(ctx);
}

// The CUDA device the GPU tests run on, of `count` devices: QUIVER_TEST_DEVICE (an ordinal, or
// "last"), 0 by default (scripts/gpu.sh runs the suites again on the last ordinal).
inline int32_t TestCudaDevice(int32_t count) {
  const char* value = std::getenv("QUIVER_TEST_DEVICE");
  if (value == nullptr || *value == 0 || count <= 0) return 0;
  if (std::string(value) == "last") return count - 1;
  const int32_t device = static_cast<int32_t>(std::atoi(value));
  return device >= 0 && device < count ? device : 0;
}

// A CUDA context on device `device_id`; empty when there is none.
inline Context MakeCudaContext(int32_t device_id, int32_t threads = 2) {
  qv_context_options_t opts;
  if (qv_context_options_init(&opts) != QV_OK) return Context();
  opts.device = QV_DEVICE_CUDA;
  opts.device_id = device_id;
  opts.cpu_threads = threads;
  qv_context_t* ctx = nullptr;
  if (qv_context_create(&opts, &ctx) != QV_OK) return Context();
  return Context(ctx);
}

// A CUDA context over the given ordinals (repeats are logical devices sharing a GPU), or with
// count_code QV_ALL_DEVICES over every visible one; empty when it cannot be made.
inline Context MakeDevicesContext(const std::vector<int32_t>& ids, int32_t count_code = 0) {
  qv_context_options_t opts;
  if (qv_context_options_init(&opts) != QV_OK) return Context();
  opts.device = QV_DEVICE_CUDA;
  opts.cpu_threads = 2;
  opts.device_count = count_code != 0 ? count_code : static_cast<int32_t>(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) opts.device_ids[i] = ids[i];
  qv_context_t* ctx = nullptr;
  if (qv_context_create(&opts, &ctx) != QV_OK) return Context();
  return Context(ctx);
}

inline Index MakeIndex(qv_context_t* ctx, int64_t dim, qv_metric_t metric,
                       const char* descriptor = "Flat") {
  qv_index_t* idx = nullptr;
  if (qv_index_create(ctx, descriptor, dim, metric, &idx) != QV_OK) return Index();
  return Index(idx);
}

inline int64_t Count(const qv_index_t* index) {
  qv_index_info_t info;
  if (qv_index_info_init(&info) != QV_OK) return -2;
  if (qv_index_info(index, &info) != QV_OK) return -3;
  return info.count;
}

inline const char* MetricName(qv_metric_t m) {
  switch (m) {
    case QV_METRIC_L2:
      return "L2";
    case QV_METRIC_INNER_PRODUCT:
      return "IP";
    case QV_METRIC_COSINE:
      return "Cosine";
    case QV_METRIC_L1:
      return "L1";
    case QV_METRIC_LINF:
      return "LInf";
    case QV_METRIC_EDIT:
      return "Edit";
  }
  return "Unknown";
}

inline bool LargerIsCloser(qv_metric_t m) { return m == QV_METRIC_INNER_PRODUCT || m == QV_METRIC_COSINE; }

inline float MissingDistance(qv_metric_t m) {
  return LargerIsCloser(m) ? -std::numeric_limits<float>::infinity()
                           : std::numeric_limits<float>::infinity();
}

// ---- data --------------------------------------------------------------------------------------

// n x dim floats in [-1, 1], each row scaled by a factor in [0.5, 2] so that norms differ and the
// inner product ranks differently from cosine. Never a zero row.
inline std::vector<float> RandomVectors(int64_t n, int64_t dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> coord(-1.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    float s = scale(rng);
    bool nonzero = false;
    for (int64_t j = 0; j < dim; ++j) {
      float v = coord(rng) * s;
      x[i * dim + j] = v;
      nonzero = nonzero || v != 0.0f;
    }
    if (!nonzero) x[i * dim] = s;
  }
  return x;
}

// n x dim points around `centres` fixed N(0, 4) centres (drawn from centre_seed), each point its
// centre plus N(0, 1) noise, centre chosen uniformly: the clustered input inverted files expect.
inline std::vector<float> ClusteredVectors(int64_t n, int64_t dim, int64_t centres, uint64_t centre_seed,
                                           uint64_t seed) {
  std::mt19937_64 centres_rng(centre_seed), rng(seed);
  std::normal_distribution<float> centre(0.0f, 2.0f), noise(0.0f, 1.0f);
  std::vector<float> c(static_cast<size_t>(centres * dim));
  for (float& v : c) v = centre(centres_rng);
  std::uniform_int_distribution<int64_t> pick(0, centres - 1);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = pick(rng);
    for (int64_t d = 0; d < dim; ++d) x[i * dim + d] = c[j * dim + d] + noise(rng);
  }
  return x;
}

// ---- float64 reference -------------------------------------------------------------------------

inline double RefDot(const float* a, const float* b, int64_t dim) {
  double s = 0;
  for (int64_t j = 0; j < dim; ++j) s += static_cast<double>(a[j]) * b[j];
  return s;
}

inline double RefNorm2(const float* a, int64_t dim) { return RefDot(a, a, dim); }

// The metric value of (query, base) in the metric's own units, in float64.
inline double RefDistance(qv_metric_t metric, const float* q, const float* x, int64_t dim) {
  switch (metric) {
    case QV_METRIC_L2: {
      double s = 0;
      for (int64_t j = 0; j < dim; ++j) {
        double d = static_cast<double>(q[j]) - x[j];
        s += d * d;
      }
      return s;
    }
    case QV_METRIC_INNER_PRODUCT:
      return RefDot(q, x, dim);
    case QV_METRIC_COSINE:
      return RefDot(q, x, dim) / std::sqrt(RefNorm2(q, dim) * RefNorm2(x, dim));
  }
  return std::nan("");
}

// The tolerance within which a float32 engine may differ from the float64 reference for one query:
// relative to the scale of the numbers involved (norms), not to the (possibly cancelling) result.
inline double Tolerance(qv_metric_t metric, const float* q, const std::vector<float>& base,
                        int64_t n, int64_t dim) {
  const double rel = 1e-4;
  double max_norm2 = 0;
  for (int64_t i = 0; i < n; ++i) max_norm2 = std::max(max_norm2, RefNorm2(&base[i * dim], dim));
  double q2 = RefNorm2(q, dim);
  switch (metric) {
    case QV_METRIC_L2:
      return rel * (q2 + max_norm2) + 1e-30;
    case QV_METRIC_INNER_PRODUCT:
      return rel * std::sqrt(q2 * max_norm2) + 1e-30;
    case QV_METRIC_COSINE:
      return rel;
  }
  return 0;
}

struct Hit {
  double distance;
  int64_t id;
};

// Every base vector ranked for one query, closest first (ties by id), restricted to `allowed` ids.
template <typename Allowed>
std::vector<Hit> RankAll(qv_metric_t metric, const float* q, const std::vector<float>& base,
                         const std::vector<int64_t>& ids, int64_t dim, Allowed allowed) {
  std::vector<Hit> hits;
  int64_t n = static_cast<int64_t>(ids.size());
  for (int64_t i = 0; i < n; ++i) {
    if (!allowed(ids[i])) continue;
    hits.push_back({RefDistance(metric, q, &base[i * dim], dim), ids[i]});
  }
  bool larger = LargerIsCloser(metric);
  std::sort(hits.begin(), hits.end(), [larger](const Hit& a, const Hit& b) {
    if (a.distance != b.distance) return larger ? a.distance > b.distance : a.distance < b.distance;
    return a.id < b.id;
  });
  return hits;
}

inline std::vector<Hit> RankAll(qv_metric_t metric, const float* q, const std::vector<float>& base,
                                const std::vector<int64_t>& ids, int64_t dim) {
  return RankAll(metric, q, base, ids, dim, [](int64_t) { return true; });
}

inline std::vector<int64_t> Iota(int64_t n, int64_t first = 0) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = first + i;
  return ids;
}

// Checks one row of k results (distances, ids) against the ranked reference of that query.
// Ids must equal the reference's except where the reference distances tie within tol; the
// distance of each returned id must be its true distance (within tol); padding where fewer than k.
inline ::testing::AssertionResult CheckRow(qv_metric_t metric, const std::vector<Hit>& ranked,
                                           const std::vector<int64_t>& ids, uint32_t k,
                                           const float* distances, const int64_t* out_ids,
                                           double tol) {
  size_t expected_hits = std::min<size_t>(k, ranked.size());
  std::vector<int64_t> seen;
  for (uint32_t j = 0; j < k; ++j) {
    if (j >= expected_hits) {
      if (out_ids[j] != -1)
        return ::testing::AssertionFailure()
               << "position " << j << ": expected padding id -1, got " << out_ids[j] << " (only "
               << ranked.size() << " candidates)";
      if (distances[j] != MissingDistance(metric))
        return ::testing::AssertionFailure() << "position " << j << ": expected padding distance "
                                             << MissingDistance(metric) << ", got " << distances[j];
      continue;
    }
    int64_t id = out_ids[j];
    if (std::isnan(distances[j]))
      return ::testing::AssertionFailure() << "position " << j << ": NaN distance";
    if (std::abs(distances[j] - ranked[j].distance) > tol)
      return ::testing::AssertionFailure()
             << "position " << j << ": distance " << distances[j] << ", reference "
             << ranked[j].distance << " (tol " << tol << ")";
    if (id != ranked[j].id) {
      // Acceptable only if the returned id is a legitimate candidate whose true distance ties with
      // the reference at this rank.
      auto it = std::find(ids.begin(), ids.end(), id);
      if (it == ids.end())
        return ::testing::AssertionFailure()
               << "position " << j << ": id " << id << " is not in the index (reference id "
               << ranked[j].id << ")";
      bool candidate = false;
      double true_d = 0;
      for (const Hit& h : ranked)
        if (h.id == id) {
          candidate = true;
          true_d = h.distance;
          break;
        }
      if (!candidate)
        return ::testing::AssertionFailure()
               << "position " << j << ": id " << id << " is not an allowed candidate";
      if (std::abs(true_d - ranked[j].distance) > tol)
        return ::testing::AssertionFailure()
               << "position " << j << ": id " << id << " (true distance " << true_d
               << ") where the reference has id " << ranked[j].id << " (distance "
               << ranked[j].distance << "), tol " << tol;
    }
    if (std::find(seen.begin(), seen.end(), id) != seen.end())
      return ::testing::AssertionFailure() << "position " << j << ": id " << id << " repeated";
    seen.push_back(id);
  }
  return ::testing::AssertionSuccess();
}

// Checks nq x k search results against the brute-force reference over (base, ids).
template <typename Allowed>
::testing::AssertionResult CheckKnn(qv_metric_t metric, const std::vector<float>& base,
                                    const std::vector<int64_t>& ids, int64_t dim,
                                    const std::vector<float>& queries, uint32_t k,
                                    const std::vector<float>& distances,
                                    const std::vector<int64_t>& out_ids, Allowed allowed) {
  int64_t nq = static_cast<int64_t>(queries.size()) / dim;
  int64_t n = static_cast<int64_t>(ids.size());
  for (int64_t qi = 0; qi < nq; ++qi) {
    const float* q = &queries[qi * dim];
    std::vector<Hit> ranked = RankAll(metric, q, base, ids, dim, allowed);
    double tol = Tolerance(metric, q, base, n, dim);
    ::testing::AssertionResult r =
        CheckRow(metric, ranked, ids, k, &distances[qi * k], &out_ids[qi * k], tol);
    if (!r) return r << " (query " << qi << ", k " << k << ", n " << n << ", dim " << dim << ")";
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult CheckKnn(qv_metric_t metric, const std::vector<float>& base,
                                           const std::vector<int64_t>& ids, int64_t dim,
                                           const std::vector<float>& queries, uint32_t k,
                                           const std::vector<float>& distances,
                                           const std::vector<int64_t>& out_ids) {
  return CheckKnn(metric, base, ids, dim, queries, k, distances, out_ids,
                  [](int64_t) { return true; });
}

// ---- search snapshots --------------------------------------------------------------------------

struct Results {
  std::vector<float> distances;
  std::vector<int64_t> ids;
  bool operator==(const Results& o) const {
    if (ids != o.ids || distances.size() != o.distances.size()) return false;
    // Bitwise, so that NaN or -0 differences are caught too and infinities compare equal.
    return std::memcmp(distances.data(), o.distances.data(), distances.size() * sizeof(float)) == 0;
  }
};

// Fraction of each query's k ids in `got` that are among its k ids in `want` (recall when `want` is
// the exact result).
inline double IdOverlap(const Results& got, const Results& want, int64_t nq, int64_t k) {
  int64_t hits = 0;
  for (int64_t q = 0; q < nq; ++q) {
    std::set<int64_t> row(want.ids.begin() + q * k, want.ids.begin() + (q + 1) * k);
    for (int64_t i = 0; i < k; ++i) hits += static_cast<int64_t>(row.count(got.ids[q * k + i]));
  }
  return static_cast<double>(hits) / static_cast<double>(nq * k);
}

inline qv_status_t Search(const qv_index_t* index, const std::vector<float>& queries, int64_t dim,
                          uint32_t k, const qv_search_params_t* params, Results* out) {
  int64_t nq = static_cast<int64_t>(queries.size()) / dim;
  out->distances.assign(static_cast<size_t>(nq * k), 0.0f);
  out->ids.assign(static_cast<size_t>(nq * k), -7);
  return qv_index_search(index, nq, queries.data(), k, params, out->distances.data(),
                         out->ids.data());
}

// What an index answers, for checking that a failed call left it as it was: the ids of each query's
// 3 nearest, then the count; {-2} when the search fails.
inline std::vector<int64_t> SearchSnapshot(const qv_index_t* index, const std::vector<float>& queries, int64_t dim) {
  const int64_t nq = static_cast<int64_t>(queries.size()) / dim;
  std::vector<float> d(static_cast<size_t>(nq * 3));
  std::vector<int64_t> ids(static_cast<size_t>(nq * 3));
  if (qv_index_search(index, nq, queries.data(), 3, nullptr, d.data(), ids.data()) != QV_OK) return {-2};
  ids.push_back(Count(index));
  return ids;
}

// ---- error messages ----------------------------------------------------------------------------

inline bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// True when `text` contains `word` as a whole token (not inside a longer identifier).
inline bool ContainsToken(const std::string& text, const std::string& word) {
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool left = pos == 0 || !IsIdentChar(text[pos - 1]);
    size_t end = pos + word.size();
    bool right = end >= text.size() || !IsIdentChar(text[end]);
    if (left && right) return true;
  }
  return false;
}

// Asserts a status and that the thread's message names the argument (as a whole token).
inline ::testing::AssertionResult FailsNaming(qv_status_t got, qv_status_t want,
                                              const std::string& arg) {
  std::string msg = qv_last_error_message();
  if (got != want)
    return ::testing::AssertionFailure() << "status " << qv_status_string(got) << " (\"" << msg
                                         << "\"), expected " << qv_status_string(want);
  if (!ContainsToken(msg, arg))
    return ::testing::AssertionFailure()
           << "message \"" << msg << "\" does not name the argument '" << arg << "'";
  return ::testing::AssertionSuccess();
}

// As FailsNaming, accepting any one of several names (e.g. "params" or "struct_size").
inline ::testing::AssertionResult FailsNamingAny(qv_status_t got, qv_status_t want,
                                                 std::initializer_list<const char*> args) {
  std::string msg = qv_last_error_message();
  if (got != want)
    return ::testing::AssertionFailure() << "status " << qv_status_string(got) << " (\"" << msg
                                         << "\"), expected " << qv_status_string(want);
  for (const char* a : args)
    if (ContainsToken(msg, a)) return ::testing::AssertionSuccess();
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  r << "message \"" << msg << "\" names none of:";
  for (const char* a : args) r << " '" << a << "'";
  return r;
}

// ---- scratch directory -------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/quiver_capi_test_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    if (path_.empty()) return;
    for (const std::string& name : List()) {
      std::string p = path_ + "/" + name;
      struct stat st;
      if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        rmdir(p.c_str());
      else
        unlink(p.c_str());
    }
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Names of the entries in the directory, sorted, without "." and "..".
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    DIR* d = opendir(path_.c_str());
    if (!d) return names;
    while (struct dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

inline bool ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  out->clear();
  uint8_t buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) out->insert(out->end(), buf, buf + got);
  std::fclose(f);
  return true;
}

inline bool WriteFile(const std::string& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

// What a qv_progress_fn_t saw (RecordProgress's user data): every fraction, in order. It asks to
// stop once more than stop_after reports have come, or at the first fraction at or past stop_at.
struct ProgressLog {
  std::vector<double> fractions;
  size_t stop_after = SIZE_MAX;
  double stop_at = 2;
};

inline int RecordProgress(double fraction, void* user) {
  auto* log = static_cast<ProgressLog*>(user);
  log->fractions.push_back(fraction);
  return log->fractions.size() > log->stop_after || fraction >= log->stop_at ? 1 : 0;
}

}  // namespace qvtest
