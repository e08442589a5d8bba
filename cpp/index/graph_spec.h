// Graph index descriptors: "Graph<R>" with optional ",K<k>" and ",H<bits>" (in that order), e.g.
// "Graph32", "Graph32,K64", "Graph32,H256".
//   R  the fixed out-degree of every row of the stored graph, 2 .. kMaxGraphDegree
//   K  the k of the k-NN graph the build prunes from, R/2 .. kMaxGraphKnnK (default R, at most
//      n - 1 for n vectors): more candidates make a better graph and a slower build. Since the
//      refine's searches start near their points, 2R gains nothing (synthetic 1M x 128, Graph32:
//      recall@10 0.9659 / 0.9663 at width 16 with K64 / K32, build 170 / 133 s).
//   H  SONG's hashing mode on a CUDA context (graph/hash_codes.h): the device holds the graph and
//      bits-bit codes of the vectors instead of the vectors, walks by Hamming distance and re-ranks
//      the final candidates exactly from host memory; for data whose vectors do not fit the device.
#pragma once

#include <cstdint>
#include <string>

namespace quiver {

constexpr int64_t kMinGraphDegree = 2;
// A row of 1024 ids is 4 KiB; wider rows only slow search down.
constexpr int64_t kMaxGraphDegree = 1024;
// knn_graph's k must stay below QV_MAX_K.
constexpr int64_t kMaxGraphKnnK = 2047;

struct GraphSpec {
  int32_t degree = 32;
  int64_t knn_k = 32;
  int32_t hash_bits = 0;  // 0: the device holds the vectors
};

// True when the descriptor names a graph index (starts with "Graph"); it is then parsed or refused.
bool is_graph_descriptor(const std::string& descriptor);

// Throws invalid_argument naming what is wrong: malformed text, R or K out of range, repeated K.
GraphSpec parse_graph_descriptor(const std::string& descriptor);

}  // namespace quiver
