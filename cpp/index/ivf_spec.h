// Inverted-file descriptors, Faiss style, parsed into what an IVF index is made of:
//   [OPQ<M>,]IVF<nlist>,Flat | [OPQ<M>,]IVF<nlist>,PQ<M>[x8]   then optional ",Refine", ",HostIds"
// OPQ is a pre-processing for PQ codes only (it rotates the space; IVF-Flat distances do not change
// under a rotation, so "OPQ..,IVF..,Flat" is refused rather than silently useless). ",Refine" keeps
// the raw vectors of an IVF-PQ index for exact re-ranking; ",HostIds" keeps a GPU index's ids in host
// memory (accepted and without effect on the CPU).
#pragma once

#include <cstdint>
#include <string>

namespace quiver {

// Largest nlist accepted (the GPU numbers lists in 32 bits; more lists than this is never useful).
constexpr int64_t kMaxIvfLists = int64_t{1} << 24;
// Largest PQ M accepted: one byte a sub-quantizer, at most 256 bytes a code.
constexpr int64_t kMaxPqM = 256;

struct IvfSpec {
  int64_t nlist = 0;
  int64_t pq_m = 0;       // 0: IVF-Flat
  int64_t opq_m = 0;      // 0: no OPQ rotation
  bool refine = false;    // keep raw vectors, re-rank exactly
  bool host_ids = false;  // GPU: ids in host memory
  bool is_pq() const { return pq_m > 0; }
};

// True when the descriptor names an inverted-file index (starts with "IVF" or "OPQ"); such a
// descriptor is then either parsed or refused with a message naming what is wrong.
bool is_ivf_descriptor(const std::string& descriptor);

// Throws invalid_argument naming the offending part: malformed text, nlist outside 1 .. kMaxIvfLists,
// PQ or OPQ M outside 1 .. min(dim, kMaxPqM) or not dividing dim, OPQ without PQ, Refine without PQ,
// repeated options.
IvfSpec parse_ivf_descriptor(const std::string& descriptor, int64_t dim);

// Search settings (SearchOptions) as an IVF index applies them.
// Lists probed when the caller leaves nprobe to the index (kNprobeDefault): min(nlist, this).
constexpr int64_t kDefaultNprobe = 8;
// ",Refine": candidates re-ranked are refine_factor x k; this factor when the caller passes 0.
constexpr int64_t kDefaultRefineFactor = 8;

// nprobe checked against nlist: kNprobeDefault gives min(nlist, kDefaultNprobe); 0 or more than
// nlist throws invalid_argument naming params->nprobe.
int64_t resolve_nprobe(uint32_t nprobe, int64_t nlist);

// The candidates a ",Refine" index re-ranks for k: refine_factor (0: kDefaultRefineFactor) x k, but
// at most max(k, kMaxK), the largest selection the GPU makes in one pass.
int64_t refine_candidates(uint32_t refine_factor, int64_t k);

}  // namespace quiver
