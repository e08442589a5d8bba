// Descriptors of indexes spread over a context's devices:
//   "Sharded<S>,<kind>"     the data split over S shards (default S: one per device), each shard a
//                           <kind> index on device s % devices; every query searches every shard and
//                           the shards' results are merged
//   "Replicated<R>,<kind>"  R full copies (default R: one per device, or per group of S devices over a
//                           "Sharded<S>" kind), each query batch split across them
//   "Replicated,Sharded<S>,<kind>"  the S x R combination: R replicas of an S-shard index
//   "Routed<S>,LC<b>"       List of Clusters shards placed by clusters and searched in two stages
//                           (the metric-space paper's 2-Stage strategy; "Sharded<S>,LC<b>" is its
//                           1-Stage one): see routed_index.h
// <kind> is any single-device descriptor ("Flat", "IVF4096,PQ32", "Graph32", "LC16", ...).
#pragma once

#include <cstdint>
#include <string>

namespace quiver {

// Most shards or replicas of one index (QV_MAX_DEVICES).
constexpr int64_t kMaxParts = 64;

struct MultiSpec {
  enum class Mode { sharded, replicated, routed };
  Mode mode = Mode::sharded;
  int64_t parts = 0;  // S or R; 0: from the device count (or, for a loaded shard set, the file)
  std::string child;  // the descriptor of each part
};

// True when the descriptor starts with "Sharded", "Replicated" or "Routed"; it is then parsed or
// refused.
bool is_multi_descriptor(const std::string& descriptor);

// Throws invalid_argument naming what is wrong: a malformed count, a missing kind, "Sharded" over a
// composite, "Replicated" over "Sharded" without an explicit S.
MultiSpec parse_multi_descriptor(const std::string& descriptor);

}  // namespace quiver
