// Helpers of the GPU IVF suites (ivf_*_test.cpp): small models built on the host (centroids and
// codebooks sampled from the data, optional random rotation), and a float64 reference of the same
// IVF semantics: the same lists probed, every entry of them scored by what the index stores (the
// vector for IVF-Flat, its centroid plus decoded PQ code for IVF-PQ), read back with ivf_list_read.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "gpu_testing.h"

namespace quiver::testing {

struct HostIvfModel {
  Metric metric = Metric::l2;
  int64_t dim = 0, nlist = 0, pq_m = 0;
  std::vector<float> centroids, rotation, codebooks;
  bool keep_raw = false, ids_on_host = false;

  gpu::IvfModelView view() const {
    gpu::IvfModelView v;
    v.metric = metric;
    v.dim = dim;
    v.nlist = nlist;
    v.centroids = centroids.data();
    v.rotation = rotation.empty() ? nullptr : rotation.data();
    v.pq_m = pq_m;
    v.pq_codebooks = codebooks.empty() ? nullptr : codebooks.data();
    v.keep_raw = keep_raw;
    v.ids_on_host = ids_on_host;
    return v;
  }
};

// A random orthogonal dim x dim matrix (Gram-Schmidt in double).
inline std::vector<float> random_rotation(int64_t dim, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q(static_cast<size_t>(dim * dim));
  for (int64_t r = 0; r < dim; ++r) {
    for (;;) {
      for (int64_t c = 0; c < dim; ++c) q[r * dim + c] = normal(gen);
      for (int64_t p = 0; p < r; ++p) {
        double dot = 0;
        for (int64_t c = 0; c < dim; ++c) dot += q[r * dim + c] * q[p * dim + c];
        for (int64_t c = 0; c < dim; ++c) q[r * dim + c] -= dot * q[p * dim + c];
      }
      double norm = 0;
      for (int64_t c = 0; c < dim; ++c) norm += q[r * dim + c] * q[r * dim + c];
      if (norm < 1e-6) continue;
      for (int64_t c = 0; c < dim; ++c) q[r * dim + c] /= std::sqrt(norm);
      break;
    }
  }
  return std::vector<float>(q.begin(), q.end());
}

inline std::vector<double> rotate(const HostIvfModel& m, const float* x) {
  std::vector<double> out(static_cast<size_t>(m.dim));
  for (int64_t a = 0; a < m.dim; ++a) {
    if (m.rotation.empty()) {
      out[a] = x[a];
    } else {
      double s = 0;
      for (int64_t b = 0; b < m.dim; ++b) s += double(m.rotation[a * m.dim + b]) * x[b];
      out[a] = s;
    }
  }
  return out;
}

// Larger is better for similarities; keys here are always "smaller is closer".
inline double key_of(bool l2, const double* a, const double* b, int64_t dim) {
  double s = 0;
  for (int64_t i = 0; i < dim; ++i) s += l2 ? (a[i] - b[i]) * (a[i] - b[i]) : a[i] * b[i];
  return l2 ? s : -s;
}

// Centroids: nlist distinct data rows; codebooks: per sub-quantizer, 256 residual parts of data rows
// (to their nearest centroid) plus a little noise, so codes are not all ties.
inline HostIvfModel make_model(const std::vector<float>& data, int64_t dim, int64_t nlist, int64_t pq_m, Metric metric,
                               bool rotated, uint32_t seed) {
  HostIvfModel m;
  m.metric = metric;
  m.dim = dim;
  m.nlist = nlist;
  m.pq_m = pq_m;
  const int64_t n = int64_t(data.size()) / dim;
  if (rotated) m.rotation = random_rotation(dim, seed + 7);
  std::mt19937 gen(seed);
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[i] = i;
  std::shuffle(rows.begin(), rows.end(), gen);
  m.centroids.resize(size_t(nlist * dim));
  for (int64_t l = 0; l < nlist; ++l) {
    const auto r = rotate(m, &data[rows[size_t(l % n)] * dim]);
    for (int64_t c = 0; c < dim; ++c) m.centroids[l * dim + c] = float(r[c]) + (l >= n ? 0.01f * float(l) : 0.f);
  }
  if (pq_m > 0) {
    const int64_t dsub = dim / pq_m;
    std::uniform_real_distribution<float> noise(-0.01f, 0.01f);
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    m.codebooks.resize(size_t(pq_m * 256 * dsub));
    for (int64_t s = 0; s < pq_m; ++s) {
      for (int64_t c = 0; c < 256; ++c) {
        const auto x = rotate(m, &data[pick(gen) * dim]);
        int64_t best = 0;
        double best_d = 1e300;
        std::vector<double> cd(static_cast<size_t>(dim));
        for (int64_t l = 0; l < nlist; ++l) {
          for (int64_t i = 0; i < dim; ++i) cd[i] = m.centroids[l * dim + i];
          const double d = key_of(true, x.data(), cd.data(), dim);
          if (d < best_d) best_d = d, best = l;
        }
        for (int64_t t = 0; t < dsub; ++t)
          m.codebooks[(s * 256 + c) * dsub + t] = float(x[s * dsub + t] - m.centroids[best * dim + s * dsub + t]) + noise(gen);
      }
    }
  }
  return m;
}

// What the index holds, read back through ivf_list_read: per entry its id, list and the vector the
// index scores (rotated space), and its raw vector when kept.
struct IndexContents {
  std::vector<int64_t> ids, lists;
  std::vector<double> vectors;  // count x dim
  std::vector<float> raw;       // count x dim (keep_raw)
  std::vector<uint8_t> codes;   // count x code_bytes
  std::map<int64_t, size_t> by_id;
};

inline IndexContents read_contents(gpu::Resources& resources, const gpu::IvfDevice& ivf, const HostIvfModel& m) {
  IndexContents out;
  const int64_t code_bytes = gpu::ivf_code_bytes(ivf);
  for (int64_t l = 0; l < m.nlist; ++l) {
    const int64_t size = gpu::ivf_list_size(ivf, l);
    if (size == 0) continue;
    std::vector<uint8_t> codes(static_cast<size_t>(size * code_bytes));
    std::vector<float> raw(m.keep_raw ? size_t(size * m.dim) : 0);
    std::vector<int64_t> ids(static_cast<size_t>(size));
    gpu::ivf_list_read(resources, ivf, l, codes.data(), m.keep_raw ? raw.data() : nullptr, ids.data());
    for (int64_t e = 0; e < size; ++e) {
      out.by_id[ids[e]] = out.ids.size();
      out.ids.push_back(ids[e]);
      out.lists.push_back(l);
      out.codes.insert(out.codes.end(), codes.begin() + e * code_bytes, codes.begin() + (e + 1) * code_bytes);
      if (m.keep_raw) out.raw.insert(out.raw.end(), raw.begin() + e * m.dim, raw.begin() + (e + 1) * m.dim);
      if (m.pq_m == 0) {
        const float* v = reinterpret_cast<const float*>(codes.data() + e * code_bytes);
        for (int64_t i = 0; i < m.dim; ++i) out.vectors.push_back(v[i]);
      } else {
        const int64_t dsub = m.dim / m.pq_m;
        for (int64_t s = 0; s < m.pq_m; ++s) {
          const int64_t c = codes[e * code_bytes + s];
          for (int64_t t = 0; t < dsub; ++t)
            out.vectors.push_back(double(m.centroids[l * m.dim + s * dsub + t]) +
                                  double(m.codebooks[(s * 256 + c) * dsub + t]));
        }
      }
    }
  }
  return out;
}

struct Reference {
  std::vector<std::pair<double, int64_t>> ranking;  // (key, id), key smaller is closer
  std::map<int64_t, double> key_of_id;               // every candidate's key
  bool ambiguous = false;                            // the probed lists are a near-tie
};

// The reference for one query: the nprobe closest lists (in double), every allowed entry of them
// scored as the index scores it. With refine_k, the refine_k best by that score are re-scored with
// exact distances to their raw vectors.
inline Reference reference(const HostIvfModel& m, const IndexContents& c, const float* query, int64_t nprobe,
                           const std::vector<uint8_t>* filter = nullptr, int64_t refine_k = 0) {
  const bool l2 = m.metric == Metric::l2;
  const auto xr = rotate(m, query);
  std::vector<std::pair<double, int64_t>> coarse;
  std::vector<double> cd(static_cast<size_t>(m.dim));
  for (int64_t l = 0; l < m.nlist; ++l) {
    for (int64_t i = 0; i < m.dim; ++i) cd[i] = m.centroids[l * m.dim + i];
    coarse.push_back({key_of(l2, xr.data(), cd.data(), m.dim), l});
  }
  std::sort(coarse.begin(), coarse.end());
  Reference ref;
  auto near_tie = [](double a, double b) { return std::abs(a - b) <= 1e-4 * (1 + std::abs(a) + std::abs(b)); };
  if (nprobe < m.nlist) ref.ambiguous = near_tie(coarse[nprobe - 1].first, coarse[nprobe].first);
  std::vector<bool> probed(size_t(m.nlist), false);
  for (int64_t p = 0; p < nprobe; ++p) probed[coarse[p].second] = true;
  std::vector<size_t> entry_of;
  for (size_t e = 0; e < c.ids.size(); ++e) {
    if (!probed[c.lists[e]]) continue;
    const int64_t id = c.ids[e];
    if (!allowed(filter, id)) continue;
    const double key = key_of(l2, xr.data(), &c.vectors[e * m.dim], m.dim);
    ref.ranking.push_back({key, id});
    ref.key_of_id[id] = key;
  }
  std::sort(ref.ranking.begin(), ref.ranking.end());
  if (refine_k > 0) {
    if (int64_t(ref.ranking.size()) > refine_k)
      ref.ambiguous = ref.ambiguous || near_tie(ref.ranking[refine_k - 1].first, ref.ranking[refine_k].first);
    ref.ranking.resize(std::min(ref.ranking.size(), size_t(refine_k)));
    ref.key_of_id.clear();
    std::vector<double> xq(query, query + m.dim);
    for (auto& [key, id] : ref.ranking) {
      const size_t e = c.by_id.at(id);
      std::vector<double> r(c.raw.begin() + e * m.dim, c.raw.begin() + (e + 1) * m.dim);
      key = key_of(l2, xq.data(), r.data(), m.dim);
      ref.key_of_id[id] = key;
    }
    std::sort(ref.ranking.begin(), ref.ranking.end());
  }
  return ref;
}

// A device index of `model` holding `data`, with ids 0 .. n - 1.
inline gpu::IvfDevicePtr filled_ivf(gpu::Resources& resources, const HostIvfModel& model,
                                    const std::vector<float>& data) {
  const int64_t n = int64_t(data.size()) / model.dim;
  auto ivf = gpu::make_ivf(resources, model.view());
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = i;
  gpu::ivf_add(resources, *ivf, n, data.data(), ids.data(), nullptr);
  return ivf;
}

// Checks one query's k results against its reference: each rank's distance within tol of the
// reference's, each id a candidate whose own reference distance is within tol of what was returned,
// ids distinct, padding where fewer than k candidates exist. Returns false (after recording the
// failure) on the first mismatch, so a broken case does not print thousands of lines.
inline bool check_query(const HostIvfModel& m, const Reference& ref, const float* dist, const int64_t* ids, int64_t k,
                        double tol, int64_t q) {
  const bool l2 = m.metric == Metric::l2;
  std::vector<int64_t> seen;
  for (int64_t r = 0; r < k; ++r) {
    if (r >= int64_t(ref.ranking.size())) {
      EXPECT_EQ(ids[r], -1) << "query " << q << " rank " << r;
      EXPECT_EQ(dist[r], l2 ? INFINITY : -INFINITY) << "query " << q << " rank " << r;
      if (ids[r] != -1) return false;
      continue;
    }
    const double want = l2 ? ref.ranking[r].first : -ref.ranking[r].first;
    EXPECT_NEAR(dist[r], want, tol) << "query " << q << " rank " << r;
    auto it = ref.key_of_id.find(ids[r]);
    EXPECT_TRUE(it != ref.key_of_id.end()) << "query " << q << " rank " << r << ": id " << ids[r]
                                           << " is not in the probed lists";
    if (it == ref.key_of_id.end()) return false;
    const double own = l2 ? it->second : -it->second;
    EXPECT_NEAR(dist[r], own, tol) << "query " << q << " rank " << r << " id " << ids[r];
    if (std::abs(dist[r] - want) > tol || std::abs(dist[r] - own) > tol) return false;
    seen.push_back(ids[r]);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_TRUE(std::adjacent_find(seen.begin(), seen.end()) == seen.end()) << "query " << q << ": repeated ids";
  return true;
}

// Runs ivf_search (host pointers) and checks every non-ambiguous query; returns how many were checked.
inline int64_t search_and_check(gpu::Resources& resources, const gpu::IvfDevice& ivf, const HostIvfModel& m,
                                const std::vector<float>& queries, int64_t k, const gpu::IvfSearchOptions& options,
                                double tol, const std::vector<uint8_t>* filter = nullptr) {
  const int64_t nq = int64_t(queries.size()) / m.dim;
  std::vector<float> dist(static_cast<size_t>(nq * k));
  std::vector<int64_t> ids(static_cast<size_t>(nq * k));
  gpu::ivf_search(resources, ivf, nq, queries.data(), k, options, dist.data(), ids.data());
  const IndexContents contents = read_contents(resources, ivf, m);
  int64_t checked = 0;
  for (int64_t q = 0; q < nq; ++q) {
    const Reference ref =
        reference(m, contents, &queries[q * m.dim], options.nprobe, filter, options.refine_k);
    if (ref.ambiguous) continue;
    ++checked;
    if (!check_query(m, ref, &dist[q * k], &ids[q * k], k, tol, q)) break;
  }
  return checked;
}

}  // namespace quiver::testing
