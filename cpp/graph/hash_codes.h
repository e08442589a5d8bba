// SONG's hashing mode (Zhao, Tan, Li, ICDE 2020, section on data larger than GPU memory): every vector
// becomes `bits` 1-bit random projections, bit j set when <x - mean, r_j> > 0 for Gaussian random
// directions r_j; the Hamming distance between two codes estimates the angle between the centred
// vectors, which orders neighbours well enough for a graph walk whose final candidates are re-ranked
// with exact distances. A code is bits / 32 words, bit j in word j / 32 at bit j % 32.
#pragma once

#include <cstdint>
#include <vector>

namespace quiver {

class ThreadPool;

// Code lengths allowed: multiples of 32 in this range.
constexpr int64_t kMinHashBits = 32;
constexpr int64_t kMaxHashBits = 1024;

struct HashProjection {
  int64_t dim = 0;
  int64_t bits = 0;                // 0: no hashing
  std::vector<float> directions;   // bits x dim, Gaussian
  std::vector<float> thresholds;   // bits: <mean, r_j>, so that bit j is <x, r_j> > thresholds[j]

  int64_t words() const { return bits / 32; }
};

// The projection for vectors like x (n x dim; the mean of its rows centres them); deterministic
// for a seed. bits: a multiple of 32 in kMinHashBits .. kMaxHashBits.
HashProjection make_hash_projection(const float* x, int64_t n, int64_t dim, int64_t bits, uint64_t seed);

// The codes of n vectors (n x dim) into codes (n x p.words()), split over the pool's threads.
void hash_codes(ThreadPool& pool, const HashProjection& p, const float* x, int64_t n, uint32_t* codes);

}  // namespace quiver
