// What the tool reads from inverted-file descriptors to sweep their search parameters: nlist (for the
// default nprobe sweep and early range checks) and whether a refine factor applies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qvtool {

// The default sweep stops here: past 256 lists the curves of the benchmarks have flattened.
constexpr int64_t kMaxDefaultNprobe = 256;

// nlist of the descriptor's "IVF<nlist>" component ("OPQ32,IVF1024,PQ32" -> 1024); 0 when it has none.
int64_t descriptor_nlist(const std::string &descriptor);

// The per-device kind of a multi-device descriptor: its leading "Sharded<S>" and "Replicated<R>"
// components dropped ("Replicated,Sharded2,Graph32" -> "Graph32"); any other descriptor unchanged.
std::string descriptor_kind(const std::string &descriptor);

// True when the descriptor has a re-ranking component (",Refine").
bool descriptor_has_refine(const std::string &descriptor);

// 1, 2, 4, ... up to min(kMaxDefaultNprobe, nlist); {0} (the index's default) when nlist is 0.
std::vector<int64_t> default_nprobe_sweep(int64_t nlist);

}  // namespace qvtool
