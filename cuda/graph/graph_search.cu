// gpu_graph.h's graph_search and graph_search_codes: SONG's search over a fixed-degree graph.
//
// Persistent warps each take one query at a time (or, for batches smaller than the SM count, a crew
// of a block's warps shares one query: all compute distances, warp 0 keeps the queue). A query has,
// in shared memory: the query; the queue, W = search_width entries
// (key, row) sorted by (key, row), a row's top bit marking it expanded (the queue is both SONG's
// candidate heap q and its result list topk, as one sorted array); the candidates of an iteration;
// and the visited set (an open-addressing table, or SONG's Bloom or Cuckoo filter in the same words:
// gpu_graph.h's VisitedSet). Per iteration:
//   1. candidate locating: the `probes` best unexpanded queue entries are marked expanded, and their
//      neighbour rows not in the visited table become candidates;
//   2. bulk distance computation: lane teams (4 .. 32 lanes, from the dimension) each take one
//      candidate, read its vector with coalesced 16-byte loads and reduce with shuffles;
//   3. maintenance: selected insertion (only candidates that beat the queue's last entry enter the
//      visited table; a second copy of a row in one iteration is dropped there), a merge of the
//      sorted survivors into the queue, and visited deletion (rows pushed out of the queue leave the
//      table: the queue's last key only falls, so they could never re-enter).
// The search ends when every queue entry is expanded. The visited table therefore holds the queue's
// rows plus tombstones; it is rebuilt from the queue when it passes half full (a filter: after as
// many insertions as the table has words).
// A half-precision walk reads the graph's 16-bit copy of the vectors (half the bytes) and ends with a
// re-rank of the queue's rows by float32 distances; a hashed walk reads codes and keys by Hamming
// distance. (On an H200 the walk is bound by its instruction issue, not by memory: bench/README.md.)
// With GraphSearchOptions::queries_per_warp 2 or 4 (SONG's multi-query per warp) a warp's lanes split
// into groups of 16 or 8, each a persistent searcher of its own query in its own shared memory, by the
// same per-query code templated on the group's width G (G = 32 compiles to the one-query-a-warp code,
// instruction for instruction). It loses on an H100 at every dimension measured (16, 32, 128:
// bench/README.md): lane teams of 4 .. 8 already give one query's distances the whole warp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/graph/graph_device.h"
#include "cuda/graph/layer_scan.h"

namespace quiver::gpu {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr uint32_t kExpanded = 0x80000000u;  // top bit of a queue entry's row
constexpr uint32_t kNoRow = 0x7fffffffu;     // an empty queue entry (sorts after every row)
constexpr int32_t kEmptySlot = -1;           // visited table: never used
constexpr int32_t kDeletedSlot = -2;         // visited table: a row deleted (probing goes on)
// Queries (warps) per block: enough to hide latency, few enough for the shared memory of wide queues.
constexpr int kMaxWarpsPerBlock = 4;
// Blocks the register budget must let stay on one SM (occupancy: a warp's walk waits on memory).
constexpr int kMinBlocksPerSm = 8;
// Most warps a crew (graph_search_crew_kernel) puts on one query.
constexpr int kMaxCrew = 16;
// Candidates of one iteration (probes x degree) the shared arrays hold.
constexpr int64_t kMaxCandidates = 256;
constexpr int64_t kStaticSharedReserve = 1024;

// The per-warp shared memory, in 4-byte words, in this order.
struct WarpLayout {
  int dim_padded;  // the query, padded to whole float4s
  int width;       // W
  int candidates;  // C
  int table;       // T, a power of two >= 2 (W + C)
  __host__ __device__ int words() const { return dim_padded + 4 * width + 4 * candidates + table; }
};

struct SearchArgs {
  const void* walk_vectors;  // rows x dim of the kernel's element type
  bool vec_walk;             // rows of walk_vectors are whole 16-byte loads
  const float* vectors;      // rows x dim float32: the re-rank of a 16-bit walk
  bool vec_exact;            // rows of vectors are whole 16-byte loads
  const int32_t* adjacency;
  const int64_t* row_ids;  // nullptr: rows are ids
  int dim;
  int degree;
  bool inner_product;
  const float* queries;  // nq x dim 4-byte words: floats, or a hashed walk's codes
  int64_t nq;
  int k;
  int probes;
  const int32_t* entries;
  int entry_count;
  // The rows each query's walk starts from, nq x query_entry_count, found by the entry layer's walk
  // (rows it did not find: -1); null: every walk starts from `entries`.
  const int64_t* query_entries;
  int query_entry_count;
  int visited;  // VisitedSet
  const uint8_t* filter;  // nullptr: every row may be returned
  int64_t filter_bits;
  float* distances;
  int64_t* ids;
  unsigned long long* next_query;  // the queries handed out so far
  WarpLayout layout;
};

__device__ __forceinline__ bool before(float ka, uint32_t ra, float kb, uint32_t rb) {
  return ka < kb || (ka == kb && (ra & ~kExpanded) < (rb & ~kExpanded));
}

__device__ __forceinline__ unsigned lanes_below() {
  unsigned mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

__device__ __forceinline__ uint32_t slot_of(int32_t row, int table) {
  return (uint32_t(row) * 2654435761u) & uint32_t(table - 1);
}

__device__ bool table_contains(const int32_t* table, int size, int32_t row) {
  for (uint32_t s = slot_of(row, size), probe = 0; probe < uint32_t(size); ++probe, s = (s + 1) & (size - 1)) {
    const int32_t v = table[s];
    if (v == row) return true;
    if (v == kEmptySlot) return false;
  }
  return false;
}

// True when this call put `row` in the table (false: it was there).
__device__ bool table_insert(int32_t* table, int size, int32_t row) {
  for (uint32_t s = slot_of(row, size), probe = 0; probe < uint32_t(size); ++probe, s = (s + 1) & (size - 1)) {
    int32_t v = table[s];
    if (v == row) return false;
    if (v == kEmptySlot) {
      v = atomicCAS(&table[s], kEmptySlot, row);
      if (v == kEmptySlot) return true;
      if (v == row) return false;
    }
  }
  return false;  // unreachable: the table is rebuilt before it fills
}

__device__ void table_delete(int32_t* table, int size, int32_t row) {
  for (uint32_t s = slot_of(row, size), probe = 0; probe < uint32_t(size); ++probe, s = (s + 1) & (size - 1)) {
    const int32_t v = table[s];
    if (v == row) {
      // Atomic: other lanes probe this slot at the same time for their own rows.
      atomicCAS(&table[s], row, kDeletedSlot);
      return;
    }
    if (v == kEmptySlot) return;
  }
}

constexpr int kHashTable = int(VisitedSet::hash_table);
constexpr int kBloom = int(VisitedSet::bloom);
constexpr int kCuckoo = int(VisitedSet::cuckoo);

// SONG's Bloom filter over the table's words: 3 bits a row, no deletion.
constexpr int kBloomHashes = 3;
__device__ __forceinline__ uint32_t bloom_bit(int32_t row, int h, int bits_log2) {
  constexpr uint32_t kMultipliers[kBloomHashes] = {2654435761u, 2246822519u, 3266489917u};
  return (uint32_t(row) * kMultipliers[h] + uint32_t(h) * 0x9e3779b9u) >> (32 - bits_log2);
}

// A Cuckoo filter over the table's words: buckets of 4 16-bit fingerprints (2 words), a row's
// fingerprint in one of two buckets (the second from the first and the fingerprint), deletion by
// removing one copy of the fingerprint. No relocation: a row whose two buckets are full is treated
// as visited (it is dropped, as a false positive would be); the load stays under half.
constexpr int kBucketSlots = 4;
__device__ __forceinline__ uint16_t cuckoo_fingerprint(int32_t row) {
  const uint32_t f = (uint32_t(row) * 2246822519u) >> 16;
  return uint16_t(f == 0 ? 1 : f);
}
__device__ __forceinline__ uint32_t cuckoo_bucket(int32_t row, int buckets_log2) {
  return (uint32_t(row) * 2654435761u) >> (32 - buckets_log2);
}
__device__ __forceinline__ uint32_t cuckoo_other(uint32_t bucket, uint16_t fingerprint, int buckets_log2) {
  return (bucket ^ ((uint32_t(fingerprint) * 3266489917u) >> (32 - buckets_log2))) & ((1u << buckets_log2) - 1);
}
__device__ __forceinline__ int log2_of(int power_of_two) { return 31 - __clz(power_of_two); }

// The lanes that search one query: the whole warp (G = 32), or one of the warp's 32 / G groups of
// G lanes when it searches several queries at once (graph_search_kernel). Per-query code names only
// its group's lanes in a collective (a group out of queries leaves while the others go on), and sees
// ballots and lane masks shifted down to the group's first lane. Free functions of the thread's own
// lane: as members of Warp they made nvcc compile the G = 32 code differently (more instructions);
// like this it is the same code as with the plain intrinsics.
template <int G>
__device__ __forceinline__ int group_base() { return threadIdx.x % kWarp / G * G; }
template <int G>
__device__ __forceinline__ unsigned group_mask() {
  if constexpr (G == kWarp) return kFullMask;
  else return ((1u << G) - 1) << group_base<G>();
}
// Lanes outside the mask contribute 0 bits to a ballot or a match (PTX ISA: vote.sync, match.sync).
template <int G>
__device__ __forceinline__ unsigned group_ballot(bool predicate) {
  if constexpr (G == kWarp) return __ballot_sync(kFullMask, predicate);
  else return __ballot_sync(group_mask<G>(), predicate) >> group_base<G>();
}
template <int G>
__device__ __forceinline__ unsigned group_match_any(int32_t value) {
  if constexpr (G == kWarp) return __match_any_sync(kFullMask, value);
  else return __match_any_sync(group_mask<G>(), value) >> group_base<G>();
}
template <int G>
__device__ __forceinline__ unsigned group_lanes_below() {
  if constexpr (G == kWarp) return lanes_below();
  else return lanes_below() >> group_base<G>();
}
template <int G>
__device__ __forceinline__ void group_sync() {
  if constexpr (G == kWarp) __syncwarp();
  else __syncwarp(group_mask<G>());
}

// Per-query state: pointers into the query's shared memory and counters uniform over its lanes
// (a warp's, or a group's of G lanes: above).
template <int G>
struct Warp {
  static_assert(G == kWarp || G == kWarp / 2 || G == kWarp / 4, "a warp searches 1, 2 or 4 queries");
  float* query;
  float* keys;      // the queue's two buffers of keys, width apart (b = 0, 1)
  uint32_t* rows;   // and of rows
  // Arithmetic, not an array indexed by cur: that would put the struct in local memory.
  __device__ float* key(int b) const { return keys + b * width; }
  __device__ uint32_t* row(int b) const { return rows + b * width; }
  float* cand_key;
  int32_t* cand_row;
  float* kept_key;
  uint32_t* kept_row;
  int32_t* table;
  int width, candidates, table_size, cur, occupied, lane;  // lane: 0 .. G - 1
  int visited;  // VisitedSet: what `table` holds
  // The warps searching this query together (1, or a block's warps) and this warp's place among
  // them: all compute distances, warp 0 alone keeps the queue and the visited table. Crews are of
  // whole warps: always 1 and 0 where G < 32.
  int crew, rank;
  // Waits for the crew between the stages (the whole block when several warps share a query).
  __device__ void crew_sync() const {
    if constexpr (G == kWarp) {
      if (crew > 1) __syncthreads();
      else __syncwarp();
    } else {
      group_sync<G>();
    }
  }
};

// The visited set (w.visited: an open-addressing table of rows, or a Bloom or Cuckoo filter in the
// same words). Filters answer "visited" for some rows never inserted (false positives: a candidate
// lost, recall), never the reverse, except a Cuckoo filter after a deletion removed a fingerprint two
// rows shared: merge_candidates then drops the copy of a row already in the queue.

template <int G>
__device__ bool visited_contains(const Warp<G>& w, int32_t row) {
  if (w.visited == kHashTable) return table_contains(w.table, w.table_size, row);
  if (w.visited == kBloom) {
    const int bits_log2 = log2_of(w.table_size) + 5;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(w.table);
    bool all = true;
#pragma unroll
    for (int h = 0; h < kBloomHashes; ++h) {
      const uint32_t b = bloom_bit(row, h, bits_log2);
      all = all && ((words[b >> 5] >> (b & 31)) & 1u);
    }
    return all;
  }
  const int buckets_log2 = log2_of(w.table_size / 2);
  const uint16_t f = cuckoo_fingerprint(row);
  const uint32_t b1 = cuckoo_bucket(row, buckets_log2), b2 = cuckoo_other(b1, f, buckets_log2);
  const uint16_t* slots = reinterpret_cast<const uint16_t*>(w.table);
#pragma unroll
  for (int i = 0; i < kBucketSlots; ++i)
    if (slots[b1 * kBucketSlots + i] == f || slots[b2 * kBucketSlots + i] == f) return true;
  return false;
}

// Called by all the query's lanes: each lane with `active` offers its row; true where this lane's
// row was put in the set (false: it was there, or another lane offers the same row, or a full filter).
template <int G>
__device__ bool visited_insert(Warp<G>& w, int32_t row, bool active) {
  if (w.visited == kHashTable) return active && table_insert(w.table, w.table_size, row);
  // One lane a row: the filters cannot tell two insertions of one row apart.
  const unsigned same = group_match_any<G>(active ? row : -1);
  if (!active || (same & group_lanes_below<G>()) != 0) return false;
  if (w.visited == kBloom) {
    const int bits_log2 = log2_of(w.table_size) + 5;
    uint32_t* words = reinterpret_cast<uint32_t*>(w.table);
    bool was = true;
#pragma unroll
    for (int h = 0; h < kBloomHashes; ++h) {
      const uint32_t b = bloom_bit(row, h, bits_log2), bit = 1u << (b & 31);
      was = (atomicOr(&words[b >> 5], bit) & bit) != 0 && was;
    }
    return !was;
  }
  if (visited_contains(w, row)) return false;
  const int buckets_log2 = log2_of(w.table_size / 2);
  const uint16_t f = cuckoo_fingerprint(row);
  const uint32_t b1 = cuckoo_bucket(row, buckets_log2), b2 = cuckoo_other(b1, f, buckets_log2);
  unsigned short* slots = reinterpret_cast<unsigned short*>(w.table);
  for (int i = 0; i < 2 * kBucketSlots; ++i) {
    unsigned short* slot = slots + (i < kBucketSlots ? b1 : b2) * kBucketSlots + i % kBucketSlots;
    if (*slot == 0 && atomicCAS(slot, (unsigned short)0, (unsigned short)f) == 0) return true;
  }
  return false;
}

template <int G>
__device__ void visited_delete(Warp<G>& w, int32_t row) {
  if (w.visited == kHashTable) {
    table_delete(w.table, w.table_size, row);
  } else if (w.visited == kCuckoo) {
    const int buckets_log2 = log2_of(w.table_size / 2);
    const uint16_t f = cuckoo_fingerprint(row);
    const uint32_t b1 = cuckoo_bucket(row, buckets_log2), b2 = cuckoo_other(b1, f, buckets_log2);
    unsigned short* slots = reinterpret_cast<unsigned short*>(w.table);
    for (int i = 0; i < 2 * kBucketSlots; ++i) {
      unsigned short* slot = slots + (i < kBucketSlots ? b1 : b2) * kBucketSlots + i % kBucketSlots;
      if (*slot == f && atomicCAS(slot, (unsigned short)f, (unsigned short)0) == f) return;
    }
  }  // a Bloom filter deletes nothing: the row stays "visited", which the queue's falling bound allows
}

// Empties the set (all the query's lanes).
template <int G>
__device__ void visited_clear(Warp<G>& w) {
  const int32_t empty = w.visited == kHashTable ? kEmptySlot : 0;
  for (int s = w.lane; s < w.table_size; s += G) w.table[s] = empty;
  group_sync<G>();
}

// Insertions the set takes before it is rebuilt from the queue: the table half full (deleted slots
// count), a Bloom filter at one row a word (32 bits a row: about 0.07% false positives), a Cuckoo
// filter at half its slots.
template <int G>
__device__ int visited_capacity(const Warp<G>& w) { return w.visited == kHashTable ? w.table_size / 2 : w.table_size; }

// 16-byte loads of the element types the walk reads, kept raw (fewer registers) and widened to
// float a pair at a time.
template <typename T>
struct Elements;
template <>
struct Elements<float> {
  using Raw = float4;
  static constexpr int kPerLoad = 4;
  static constexpr int kLoads = 4;  // loads in flight per lane
  __device__ static Raw load(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
  __device__ static float2 pair(const Raw& r, int i) { return i == 0 ? make_float2(r.x, r.y) : make_float2(r.z, r.w); }
  __device__ static float one(const float* p) { return __ldg(p); }
};
template <>
struct Elements<__half> {
  using Raw = uint4;
  static constexpr int kPerLoad = 8;
  static constexpr int kLoads = 2;  // as many values in flight as float's 4 loads, fewer registers
  __device__ static Raw load(const __half* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
  __device__ static float2 pair(const Raw& r, int i) {
    return __half22float2(reinterpret_cast<const __half2*>(&r)[i]);
  }
  __device__ static float one(const __half* p) { return __half2float(__ldg(p)); }
};
template <>
struct Elements<__nv_bfloat16> {
  using Raw = uint4;
  static constexpr int kPerLoad = 8;
  static constexpr int kLoads = 2;  // as many values in flight as float's 4 loads, fewer registers
  __device__ static Raw load(const __nv_bfloat16* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
  __device__ static float2 pair(const Raw& r, int i) {
    return __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(&r)[i]);
  }
  __device__ static float one(const __nv_bfloat16* p) { return __bfloat162float(__ldg(p)); }
};

__device__ __forceinline__ float accumulate(bool inner_product, float q, float x, float sum) {
  return inner_product ? fmaf(q, x, sum) : fmaf(q - x, q - x, sum);
}

// Distances of cand_row[0 .. count) to the query into cand_key (keys: squared L2, or -<q, x>), from
// rows of `vectors` (vec: each row is whole 16-byte loads). Each lane keeps Elements<T>::kLoads
// independent sums so that it issues that many loads before it waits for the first: one warp's
// search is bound by memory latency, not bandwidth.
template <int kTeam, typename T, int G>
__device__ void compute_distances(const T* vectors, int dim, bool vec, bool inner_product, Warp<G>& w, int count) {
  static_assert(kTeam <= G, "a team is some of the query's lanes");
  constexpr int kTeams = G / kTeam;
  constexpr int P = Elements<T>::kPerLoad, kLoads = Elements<T>::kLoads;
  const int member = w.lane % kTeam, team = w.rank * kTeams + w.lane / kTeam;
  for (int c0 = 0; c0 < count; c0 += kTeams * w.crew) {
    const int c = c0 + team;
    float sums[kLoads] = {};
    if (c < count) {
      const T* x = vectors + int64_t(w.cand_row[c]) * dim;
      if (vec) {
        const int loads = dim / P;
        for (int f0 = member; f0 < loads; f0 += kTeam * kLoads) {
          typename Elements<T>::Raw v[kLoads];
#pragma unroll
          for (int u = 0; u < kLoads; ++u)
            if (f0 + u * kTeam < loads) v[u] = Elements<T>::load(x + (f0 + u * kTeam) * P);
#pragma unroll
          for (int u = 0; u < kLoads; ++u) {
            const int f = f0 + u * kTeam;
            if (f >= loads) continue;
            const float2* q = reinterpret_cast<const float2*>(w.query + f * P);
#pragma unroll
            for (int i = 0; i < P / 2; ++i) {
              const float2 p = q[i], e = Elements<T>::pair(v[u], i);
              sums[u] = accumulate(inner_product, p.y, e.y, accumulate(inner_product, p.x, e.x, sums[u]));
            }
          }
        }
      } else {
        for (int f0 = member; f0 < dim; f0 += kTeam * kLoads) {
          float v[kLoads];
#pragma unroll
          for (int u = 0; u < kLoads; ++u) v[u] = f0 + u * kTeam < dim ? Elements<T>::one(x + f0 + u * kTeam) : 0.0f;
#pragma unroll
          for (int u = 0; u < kLoads; ++u) {
            const float p = f0 + u * kTeam < dim ? w.query[f0 + u * kTeam] : 0.0f;
            sums[u] = accumulate(inner_product, p, v[u], sums[u]);
          }
        }
      }
    }
    float sum = sums[0];
#pragma unroll
    for (int u = 1; u < kLoads; ++u) sum += sums[u];
    for (int offset = kTeam / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(group_mask<G>(), sum, offset);
    if (c < count && member == 0) w.cand_key[c] = inner_product ? -sum : sum;
  }
  group_sync<G>();
}

// The walk of a hashed graph (graph_upload_codes) reads codes: keys are Hamming distances to the
// query's code, which search_query keeps where a vector query would be.
struct HammingCode {};

template <int G>
__device__ void hamming_distances(const uint32_t* codes, int words, Warp<G>& w, int count) {
  const uint32_t* q = reinterpret_cast<const uint32_t*>(w.query);
  for (int c = w.rank * G + w.lane; c < count; c += G * w.crew) {
    const uint32_t* x = codes + int64_t(w.cand_row[c]) * words;
    int d = 0;
    if (words % 4 == 0) {
      for (int i = 0; i < words; i += 4) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(x + i));
        d += __popc(q[i] ^ v.x) + __popc(q[i + 1] ^ v.y) + __popc(q[i + 2] ^ v.z) + __popc(q[i + 3] ^ v.w);
      }
    } else {
      for (int i = 0; i < words; ++i) d += __popc(q[i] ^ __ldg(x + i));
    }
    w.cand_key[c] = float(d);
  }
  group_sync<G>();
}

template <int kTeam, typename T, int G>
__device__ void walk_distances(const SearchArgs& a, Warp<G>& w, int count) {
  if constexpr (std::is_same_v<T, HammingCode>)
    hamming_distances(static_cast<const uint32_t*>(a.walk_vectors), a.dim, w, count);
  else
    compute_distances<kTeam, T>(static_cast<const T*>(a.walk_vectors), a.dim, a.vec_walk, a.inner_product, w,
                                count);
}

// Clears the visited set and puts the queue's rows back in it.
template <int G>
__device__ void rebuild_table(Warp<G>& w) {
  visited_clear(w);
  int inserted = 0;
  for (int i0 = 0; i0 < w.width; i0 += G) {
    const int i = i0 + w.lane;
    const uint32_t r = i < w.width ? w.row(w.cur)[i] & ~kExpanded : kNoRow;
    const bool in = visited_insert(w, int32_t(r), r != kNoRow);
    inserted += __popc(group_ballot<G>(in));
  }
  w.occupied = inserted;
  group_sync<G>();
}

// Entries before (key, row) in the sorted queue buffer b.
template <int G>
__device__ int queue_position(const Warp<G>& w, int b, float key, uint32_t row) {
  int lo = 0, hi = w.width;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (before(w.key(b)[mid], w.row(b)[mid], key, row)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Removes from the sorted kept candidates [0, kept) the rows the queue holds already (a Cuckoo
// filter that lost a row's fingerprint to a deletion); returns how many are left.
template <int G>
__device__ int drop_rows_in_queue(Warp<G>& w, int kept) {
  int left = 0;
  for (int j0 = 0; j0 < kept; j0 += G) {
    const int j = j0 + w.lane;
    float kk = 0.0f;
    uint32_t kr = 0;
    bool stays = false;
    if (j < kept) {
      kk = w.kept_key[j];
      kr = w.kept_row[j];
      const int at = queue_position(w, w.cur, kk, kr);
      stays = !(at < w.width && w.key(w.cur)[at] == kk && (w.row(w.cur)[at] & ~kExpanded) == kr);
    }
    const unsigned mask = group_ballot<G>(stays);
    group_sync<G>();
    if (stays) {
      w.kept_key[left + __popc(mask & group_lanes_below<G>())] = kk;
      w.kept_row[left + __popc(mask & group_lanes_below<G>())] = kr;
    }
    left += __popc(mask);
    group_sync<G>();
  }
  return left;
}

// Selected insertion, then the merge of the surviving candidates into the queue (visited deletion of
// the rows that fall out).
template <int G>
__device__ void merge_candidates(Warp<G>& w, int count) {
  const int W = w.width;
  const float worst_key = w.key(w.cur)[W - 1];
  const uint32_t worst_row = w.row(w.cur)[W - 1];
  // 1. keep candidates that beat the queue's last entry and are new to the table, compacted in place.
  int kept = 0;
  for (int c0 = 0; c0 < count; c0 += G) {
    const int c = c0 + w.lane;
    float key = 0.0f;
    int32_t r = 0;
    bool beats = false;
    if (c < count) {
      key = w.cand_key[c];
      r = w.cand_row[c];
      beats = before(key, uint32_t(r), worst_key, worst_row);
    }
    const bool keep = visited_insert(w, r, beats);
    const unsigned mask = group_ballot<G>(keep);
    group_sync<G>();
    if (keep) {
      const int pos = kept + __popc(mask & group_lanes_below<G>());
      w.cand_key[pos] = key;
      w.cand_row[pos] = r;
    }
    kept += __popc(mask);
    group_sync<G>();
  }
  w.occupied += kept;
  if (kept == 0) return;
  // 2. sort the kept candidates by rank (few: one comparison per pair).
  for (int j = w.lane; j < kept; j += G) {
    const float key = w.cand_key[j];
    const uint32_t r = uint32_t(w.cand_row[j]);
    int rank = 0;
    for (int i = 0; i < kept; ++i) rank += before(w.cand_key[i], uint32_t(w.cand_row[i]), key, r);
    w.kept_key[rank] = key;
    w.kept_row[rank] = r;
  }
  group_sync<G>();
  if (w.visited == kCuckoo) {
    kept = drop_rows_in_queue(w, kept);
    if (kept == 0) return;
  }
  // 3. merge into the other queue buffer: each entry's place is its index plus the entries of the
  // other list before it.
  const int next = 1 - w.cur;
  const float* key = w.key(w.cur);
  const uint32_t* row = w.row(w.cur);
  for (int j = w.lane; j < kept; j += G) {
    const float kk = w.kept_key[j];
    const uint32_t kr = w.kept_row[j];
    int lo = 0, hi = W;  // queue entries before (kk, kr)
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (before(key[mid], row[mid], kk, kr)) lo = mid + 1;
      else hi = mid;
    }
    const int pos = j + lo;
    if (pos < W) {
      w.key(next)[pos] = kk;
      w.row(next)[pos] = kr;
    } else {
      visited_delete(w, int32_t(kr));
    }
  }
  for (int i = w.lane; i < W; i += G) {
    const float qk = key[i];
    const uint32_t qr = row[i];
    int lo = 0, hi = kept;  // kept candidates before (qk, qr)
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (before(w.kept_key[mid], w.kept_row[mid], qk, qr)) lo = mid + 1;
      else hi = mid;
    }
    const int pos = i + lo;
    if (pos < W) {
      w.key(next)[pos] = qk;
      w.row(next)[pos] = qr;
    } else if ((qr & ~kExpanded) != kNoRow) {
      visited_delete(w, int32_t(qr & ~kExpanded));
    }
  }
  w.cur = next;
  group_sync<G>();
}

// The end of a 16-bit walk: the queue's rows get float32 keys and are sorted again.
template <int kTeam, int G>
__device__ void rerank_queue(const SearchArgs& a, Warp<G>& w) {
  const uint32_t* row = w.row(w.cur);
  // The filled entries are a prefix (empty ones sort last).
  int filled = 0;
  for (int i0 = 0; i0 < w.width; i0 += G) {
    const int i = i0 + w.lane;
    filled += __popc(group_ballot<G>(i < w.width && (row[i] & ~kExpanded) != kNoRow));
  }
  const int next = 1 - w.cur;
  for (int i0 = 0; i0 < filled; i0 += w.candidates) {
    const int count = min(w.candidates, filled - i0);
    for (int j = w.lane; j < count; j += G) w.cand_row[j] = int32_t(row[i0 + j] & ~kExpanded);
    group_sync<G>();
    Warp<G> alone = w;  // the leader re-ranks by itself
    alone.crew = 1;
    alone.rank = 0;
    compute_distances<kTeam, float>(a.vectors, a.dim, a.vec_exact, a.inner_product, alone, count);
    for (int j = w.lane; j < count; j += G) w.key(next)[i0 + j] = w.cand_key[j];
    group_sync<G>();
  }
  // Rank sort (rows are distinct): keys from key[next] to key[cur], rows from row[cur] through
  // row[next] back to row[cur]; the empty tail stays as it is.
  const float* exact = w.key(next);
  for (int i = w.lane; i < filled; i += G) {
    const float ki = exact[i];
    const uint32_t ri = row[i];
    int rank = 0;
    for (int j = 0; j < filled; ++j) rank += before(exact[j], row[j], ki, ri);
    w.key(w.cur)[rank] = ki;
    w.row(next)[rank] = ri;
  }
  group_sync<G>();
  for (int i = w.lane; i < filled; i += G) w.row(w.cur)[i] = w.row(next)[i];
  group_sync<G>();
}

// The i-th row the walk of query q starts from: its own (one the entry layer's walk did not find:
// the first entry point, which the visited set then takes once), or the graph's entry points.
__device__ __forceinline__ int32_t start_row(const SearchArgs& a, int64_t q, int i) {
  if (a.query_entries == nullptr) return a.entries[i];
  const int64_t row = a.query_entries[q * a.query_entry_count + i];
  return row >= 0 ? int32_t(row) : a.entries[0];
}

// One query's whole search, by a crew of warps (w.crew, see Warp) or by one group of a warp's lanes:
// `picked_row` and `count` are the crew's (the group's) shared scratch.
template <int kTeam, typename T, int G>
__device__ void search_query(const SearchArgs& a, Warp<G>& w, int32_t* picked_row, int* count, int64_t q) {
  const WarpLayout& L = a.layout;
  const bool leader = w.rank == 0;
  // Copied as 4-byte words: a hashed walk's queries are codes.
  const uint32_t* query = reinterpret_cast<const uint32_t*>(a.queries) + q * a.dim;
  uint32_t* query_words = reinterpret_cast<uint32_t*>(w.query);
  for (int d = w.rank * G + w.lane; d < L.dim_padded; d += G * w.crew)
    query_words[d] = d < a.dim ? query[d] : 0u;
  w.cur = 0;
  w.occupied = 0;
  if (leader) {
    for (int i = w.lane; i < L.width; i += G) {
      w.key(0)[i] = __int_as_float(0x7f800000);  // +inf
      w.row(0)[i] = kNoRow;
    }
    visited_clear(w);
  }
  w.crew_sync();

  // The start rows, in batches of the candidate arrays.
  const int starts = a.query_entries != nullptr ? a.query_entry_count : a.entry_count;
  for (int e0 = 0; e0 < starts; e0 += L.candidates) {
    const int n = min(L.candidates, starts - e0);
    if (leader)
      for (int i = w.lane; i < n; i += G) w.cand_row[i] = start_row(a, q, e0 + i);
    w.crew_sync();
    walk_distances<kTeam, T>(a, w, n);
    w.crew_sync();
    if (leader) merge_candidates(w, n);
  }

  while (true) {
    if (leader) {
      // 1. candidate locating: the best unexpanded entries and their unvisited neighbours.
      int picked = 0;
      for (int i0 = 0; i0 < L.width && picked < a.probes; i0 += G) {
        const int i = i0 + w.lane;
        const uint32_t r = i < L.width ? w.row(w.cur)[i] : kNoRow;
        unsigned mask = group_ballot<G>(r != kNoRow && (r & kExpanded) == 0);
        while (mask != 0 && picked < a.probes) {
          const int src = __ffs(mask) - 1;
          mask &= mask - 1;
          if (w.lane == src) {
            picked_row[picked] = int32_t(r);
            w.row(w.cur)[i] = r | kExpanded;
          }
          ++picked;
        }
      }
      group_sync<G>();
      int found = -1;  // -1: every entry is expanded, the search is over
      if (picked > 0) {
        if (w.occupied + picked * a.degree > visited_capacity(w)) rebuild_table(w);
        found = 0;
        const int total = picked * a.degree;
        for (int j0 = 0; j0 < total; j0 += G) {
          const int j = j0 + w.lane;
          int32_t nb = -1;
          if (j < total) nb = __ldg(a.adjacency + int64_t(picked_row[j / a.degree]) * a.degree + j % a.degree);
          const bool fresh = nb >= 0 && !visited_contains(w, nb);
          const unsigned mask = group_ballot<G>(fresh);
          if (fresh) w.cand_row[found + __popc(mask & group_lanes_below<G>())] = nb;
          found += __popc(mask);
        }
      }
      if (w.lane == 0) *count = found;
    }
    w.crew_sync();
    const int n = *count;
    if (n < 0) break;
    // 2. bulk distances (the whole crew), 3. maintenance (the leader).
    walk_distances<kTeam, T>(a, w, n);
    w.crew_sync();
    if (leader) merge_candidates(w, n);
  }
  if (!leader) return;
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) rerank_queue<kTeam>(a, w);

  // The first k allowed entries are the results.
  int written = 0;
  for (int i0 = 0; i0 < L.width && written < a.k; i0 += G) {
    const int i = i0 + w.lane;
    const uint32_t r = i < L.width ? w.row(w.cur)[i] & ~kExpanded : kNoRow;
    bool allowed = r != kNoRow;
    if (allowed && a.filter != nullptr)
      allowed = int64_t(r) < a.filter_bits && (a.filter[r >> 3] >> (r & 7)) & 1;
    const unsigned mask = group_ballot<G>(allowed);
    const int pos = written + __popc(mask & group_lanes_below<G>());
    if (allowed && pos < a.k) {
      const float key = w.key(w.cur)[i];
      a.distances[q * a.k + pos] = a.inner_product ? -key : key;
      a.ids[q * a.k + pos] = a.row_ids != nullptr ? a.row_ids[r] : int64_t(r);
    }
    written += __popc(mask);
  }
  for (int pos = written + w.lane; pos < a.k; pos += G) {
    a.distances[q * a.k + pos] = a.inner_product ? __int_as_float(0xff800000) : __int_as_float(0x7f800000);
    a.ids[q * a.k + pos] = -1;
  }
  group_sync<G>();  // the next query overwrites what the lanes read here
}

// A warp's (a group's: G < 32) view of its query's shared memory at `base`.
template <int G>
__device__ Warp<G> warp_view(const WarpLayout& L, float* base, int crew, int rank, int visited) {
  Warp<G> w;
  w.visited = visited;
  w.lane = threadIdx.x % G;
  w.crew = crew;
  w.rank = rank;
  w.width = L.width;
  w.candidates = L.candidates;
  w.table_size = L.table;
  w.query = base;
  w.keys = base + L.dim_padded;
  w.rows = reinterpret_cast<uint32_t*>(w.keys + 2 * L.width);
  w.cand_key = reinterpret_cast<float*>(w.rows + 2 * L.width);
  w.cand_row = reinterpret_cast<int32_t*>(w.cand_key + L.candidates);
  w.kept_key = reinterpret_cast<float*>(w.cand_row + L.candidates);
  w.kept_row = reinterpret_cast<uint32_t*>(w.kept_key + L.candidates);
  w.table = reinterpret_cast<int32_t*>(w.kept_row + L.candidates);
  return w;
}

// Persistent warps: each takes the next query when it is done with one (walk lengths vary, so this
// keeps every warp busy to the end instead of waiting for the slowest warp of its block). G < 32:
// SONG's multi-query per warp, each group of G lanes a persistent searcher of its own, with its own
// shared memory (a WarpLayout a group, in lane order) and scratch.
template <int kTeam, typename T, int G>
__global__ void __launch_bounds__(kMaxWarpsPerBlock * kWarp, kMinBlocksPerSm) graph_search_kernel(SearchArgs a) {
  constexpr int kGroups = kMaxWarpsPerBlock * (kWarp / G);  // queries a block searches at once
  extern __shared__ __align__(16) float shared[];
  __shared__ int32_t picked_rows[kGroups][kMaxProbes];
  __shared__ int counts[kGroups];
  const int group = threadIdx.x / G;  // in the block
  Warp<G> w = warp_view<G>(a.layout, shared + int64_t(group) * a.layout.words(), 1, 0, a.visited);
  while (true) {
    unsigned long long q = 0;
    if (w.lane == 0) q = atomicAdd(a.next_query, 1ull);
    q = __shfl_sync(group_mask<G>(), q, 0, G);
    // The whole group leaves; the warp's other groups go on (their collectives name only their lanes).
    if (q >= (unsigned long long)a.nq) return;
    search_query<kTeam, T>(a, w, picked_rows[group], &counts[group], int64_t(q));
  }
}

// Crews: a block's warps search one query together (blockIdx.x), for batches too small to fill the
// device with one warp a query: a query alone is a chain of dependent expansions, and sharing each
// expansion's distances among the warps shortens every link.
template <int kTeam, typename T>
__global__ void __launch_bounds__(kMaxCrew * kWarp) graph_search_crew_kernel(SearchArgs a) {
  extern __shared__ __align__(16) float shared[];
  __shared__ int32_t picked_row[kMaxProbes];
  __shared__ int count;
  Warp<kWarp> w = warp_view<kWarp>(a.layout, shared, blockDim.x / kWarp, threadIdx.x / kWarp, a.visited);
  search_query<kTeam, T>(a, w, picked_row, &count, blockIdx.x);
}

using KernelFn = void (*)(SearchArgs);

// A walk's kernels: persistent warps searching 1, 2 or 4 queries each (a distance's team at most
// the lanes of a query), and crews.
struct Kernels {
  KernelFn warp[3];  // by queries a warp: 1, 2, 4
  KernelFn crew;
};

template <int kTeam, typename T>
Kernels kernels() {
  return {{graph_search_kernel<kTeam, T, kWarp>, graph_search_kernel<std::min(kTeam, kWarp / 2), T, kWarp / 2>,
           graph_search_kernel<std::min(kTeam, kWarp / 4), T, kWarp / 4>},
          graph_search_crew_kernel<kTeam, T>};
}

template <typename T>
Kernels kernels_for_team(int team) {
  switch (team) {
    case 4: return kernels<4, T>();
    case 8: return kernels<8, T>();
    case 16: return kernels<16, T>();
    default: return kernels<32, T>();
  }
}

// Lanes per distance: about 16 values per lane (one round of a lane's loads in flight), 4 .. 32.
int team_size(int64_t dim) {
  int team = 4;
  while (team < kWarp && team * 16 < dim) team *= 2;
  return team;
}

int next_power_of_two(int64_t x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

// Which walk a search runs: the kernel and what it reads (chosen inside the search's Session, where
// the 16-bit copy may be made).
struct Walk {
  Kernels kernels;
  int team;  // lanes a distance takes
  const void* data;
  bool vec;
};
using PickWalk = Walk (*)(Resources& resources, const GraphDevice& graph, const GraphSearchOptions& options);

Walk vector_walk(Resources& resources, const GraphDevice& graph, const GraphSearchOptions& options) {
  const int team = team_size(graph.dim);
  if (!options.half_walk) return {kernels_for_team<float>(team), team, graph.vectors.get(), graph.dim % 4 == 0};
  bool bf16 = false;
  const uint16_t* half = graph_half_vectors(resources, graph, &bf16);
  return {bf16 ? kernels_for_team<__nv_bfloat16>(team) : kernels_for_team<__half>(team), team, half,
          graph.dim % 8 == 0};
}

Walk code_walk(Resources&, const GraphDevice& graph, const GraphSearchOptions&) {
  return {kernels<kWarp, HammingCode>(), 1, graph.codes.get(), false};  // a lane a code
}

// Warps a query gets: options.warps_per_query, or automatically a crew when the batch leaves most of
// the device idle (fewer queries than SMs): enough warps for every candidate of an expansion at once.
// Never a crew when a warp searches several queries.
int crew_size(const GraphSearchOptions& options, int64_t nq, int team, int candidates, int sm_count) {
  if (options.queries_per_warp > 1) return 1;
  if (options.warps_per_query > 0) return int(options.warps_per_query);
  if (nq >= sm_count) return 1;
  const int per_warp = kWarp / team;
  return std::clamp((candidates + per_warp - 1) / per_warp, 1, kMaxCrew);
}

// Dynamic shared memory a walk may use: the opt-in maximum less the kernel's own static shared
// memory (picked rows).
int64_t max_walk_shared(Resources& resources) { return resources.limits().max_shared_bytes - kStaticSharedReserve; }

// A walk's per-query shared memory for `options` over `graph`, checked against the device.
WarpLayout walk_layout(Resources& resources, const GraphDevice& graph, const GraphSearchOptions& options) {
  WarpLayout layout;
  layout.dim_padded = int((graph.dim + 3) / 4 * 4);
  layout.width = int(options.search_width);
  layout.candidates = int(std::max<int64_t>(options.probes * graph.degree, kWarp));
  layout.table = next_power_of_two(2 * (layout.width + layout.candidates));
  const int64_t query_bytes = int64_t(layout.words()) * 4;
  const int64_t max_shared = max_walk_shared(resources);
  require(query_bytes <= max_shared, "search_width = ", options.search_width, " needs ", query_bytes,
          " bytes of shared memory per query, above the device's ", max_shared);
  require(query_bytes * options.queries_per_warp <= max_shared, "queries_per_warp = ", options.queries_per_warp,
          " at search_width = ", options.search_width, " needs ", query_bytes * options.queries_per_warp,
          " bytes of shared memory per warp, above the device's ", max_shared);
  return layout;
}

// What a walk over `graph` reads, for `a` (its queries, k, outputs and start rows set by the caller).
void set_graph(SearchArgs& a, const GraphDevice& graph, const GraphSearchOptions& options, Resources& resources) {
  a.layout = walk_layout(resources, graph, options);
  a.vectors = graph.vectors.get();
  a.vec_exact = graph.dim % 4 == 0;
  a.adjacency = graph.adjacency.get();
  a.row_ids = graph.ids.size() > 0 ? graph.ids.get() : nullptr;
  a.dim = int(graph.dim);
  a.degree = int(graph.degree);
  a.inner_product = graph.metric == Metric::inner_product;
  a.probes = int(options.probes);
  a.visited = int(options.visited);
  a.entries = graph.entries.get();
  a.entry_count = int(graph.entries.size());
}

// Launches `walk` for a.nq queries (a: set_graph's, plus the queries and outputs on the device), on
// the resources' stream 0, inside the caller's Session.
void launch_walk(Resources& resources, const Walk& walk, const GraphSearchOptions& options, SearchArgs a) {
  const int64_t max_shared = max_walk_shared(resources);
  const int64_t query_bytes = int64_t(a.layout.words()) * 4;
  const int crew = crew_size(options, a.nq, walk.team, a.layout.candidates, resources.limits().sm_count);
  // warp[0], [1], [2]: 1, 2, 4 queries a warp.
  const int queries_per_warp = int(options.queries_per_warp);
  const KernelFn kernel = crew > 1 ? walk.kernels.crew : walk.kernels.warp[queries_per_warp / 2];
  const int64_t warp_bytes = query_bytes * queries_per_warp;
  // Persistent warps: as many a block as the shared memory allows; a crew: one query's memory.
  const int warps = crew > 1 ? crew : int(std::clamp<int64_t>(max_shared / warp_bytes, 1, kMaxWarpsPerBlock));
  const int64_t shared_bytes = crew > 1 ? query_bytes : warp_bytes * warps;
  a.walk_vectors = walk.data;
  a.vec_walk = walk.vec;
  cudaStream_t stream = resources.stream(0);
  // Back in the pool at return, while the kernel may still run: within the call only later work on
  // the same stream (after the kernel, in stream order) can be handed it (memory_pool.h).
  PoolBuffer<unsigned long long> next_query(resources.pool(), 1);
  QV_CUDA_CHECK(cudaMemsetAsync(next_query.get(), 0, sizeof(unsigned long long), stream));
  a.next_query = next_query.get();
  QV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes)));
  int64_t blocks = a.nq;  // a crew: a block a query
  if (crew == 1) {
    // As many blocks as stay resident at once (persistent warps), fewer for small batches.
    int per_sm = 0;
    QV_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * kWarp, size_t(shared_bytes)));
    const int64_t per_block = int64_t(warps) * queries_per_warp;  // queries a block searches at once
    blocks = std::min<int64_t>((a.nq + per_block - 1) / per_block,
                               int64_t(std::max(per_sm, 1)) * resources.limits().sm_count);
  }
  kernel<<<unsigned(blocks), unsigned(warps * kWarp), size_t(shared_bytes), stream>>>(a);
  QV_LAUNCH_CHECK("graph_search_kernel");
}

// The walk of the graph's entry layer for nq queries (q_dev, on the device): each query's
// graph.layer_starts best layer rows, as rows of the graph, into `starts` (nq x layer_starts).
void walk_layer(Resources& resources, const GraphDevice& graph, const GraphSearchOptions& options, int64_t nq,
                const float* q_dev, PoolBuffer<float>& keys, PoolBuffer<int64_t>& starts) {
  const GraphDevice& layer = *graph.layer;
  GraphSearchOptions layer_options;  // no filter: the walk over the graph applies it
  layer_options.search_width = graph.layer_width;
  layer_options.visited = options.visited;
  layer_options.warps_per_query = options.warps_per_query;
  SearchArgs a{};
  set_graph(a, layer, layer_options, resources);
  keys = PoolBuffer<float>(resources.pool(), nq * graph.layer_starts);
  starts = PoolBuffer<int64_t>(resources.pool(), nq * graph.layer_starts);
  a.queries = q_dev;
  a.nq = nq;
  a.k = int(graph.layer_starts);
  a.distances = keys.get();
  a.ids = starts.get();
  // A hashed graph's layer holds codes, and its queries are codes.
  const PickWalk pick = layer.codes.size() > 0 ? code_walk : vector_walk;
  launch_walk(resources, pick(resources, layer, layer_options), layer_options, a);
}

// queries: nq x graph.dim 4-byte words (floats or codes); distances may be null (not wanted).
void run_search(Resources& resources, const GraphDevice& graph, int64_t nq, const void* queries, int64_t k,
                const GraphSearchOptions& options, PickWalk pick, float* distances, int64_t* ids) {
  DeviceScope device_scope(resources.device());
  require(graph.device == resources.device(), "the graph lives on device ", graph.device, ", the resources on ",
          resources.device());
  require(graph.rows > 0, "the graph is empty");
  require(nq >= 0, "nq = ", nq, " is negative");
  require(options.search_width >= 1 && options.search_width <= kMaxSearchWidth, "search_width = ",
          options.search_width, " is outside 1 .. ", kMaxSearchWidth);
  require(k >= 1 && k <= options.search_width, "k = ", k, " is outside 1 .. search_width (",
          options.search_width, ")");
  require(options.probes >= 1 && options.probes <= kMaxProbes, "probes = ", options.probes, " is outside 1 .. ",
          kMaxProbes);
  require(options.probes * graph.degree <= kMaxCandidates, "probes x degree = ", options.probes * graph.degree,
          " is above ", kMaxCandidates);
  require(options.warps_per_query >= 0 && options.warps_per_query <= kMaxCrew, "warps_per_query = ",
          options.warps_per_query, " is outside 0 .. ", kMaxCrew);
  require(int(options.visited) >= kHashTable && int(options.visited) <= kCuckoo, "visited = ", int(options.visited),
          " is not a VisitedSet");
  require(options.queries_per_warp == 1 || options.queries_per_warp == 2 || options.queries_per_warp == 4,
          "queries_per_warp = ", options.queries_per_warp, " is not 1, 2 or 4");
  require(options.queries_per_warp == 1 || options.warps_per_query <= 1, "queries_per_warp = ",
          options.queries_per_warp, " with warps_per_query = ", options.warps_per_query,
          ": a warp searching several queries cannot also share one query with other warps");
  SearchArgs a{};
  set_graph(a, graph, options, resources);
  if (nq == 0) return;
  require(queries != nullptr && ids != nullptr, "queries and ids must not be null");

  Session session(resources);
  const Walk walk = pick(resources, graph, options);
  cudaStream_t stream = resources.stream(0);
  DevicePool& pool = resources.pool();
  const int device = resources.device();
  PoolBuffer<float> q_dev(pool, nq * graph.dim);
  copy_to_device(resources.staging(), device, q_dev.get(), queries, size_t(nq * graph.dim) * 4, stream);
  PoolBuffer<uint8_t> filter;
  if (options.filter.bits != nullptr) {
    const int64_t bytes = (options.filter.nbits + 7) / 8;
    filter = PoolBuffer<uint8_t>(pool, std::max<int64_t>(bytes, 1));
    if (bytes > 0) copy_to_device(resources.staging(), device, filter.get(), options.filter.bits, size_t(bytes), stream);
  }
  PoolBuffer<float> layer_keys;
  PoolBuffer<int64_t> starts;
  if (graph.layer) {
    if (layer_scan_applies(*graph.layer, graph.layer_starts, nq)) {
      starts = PoolBuffer<int64_t>(pool, nq * graph.layer_starts);
      scan_layer(*graph.layer, graph.layer_starts, nq, q_dev.get(), starts.get(), pool, stream);
    } else {
      walk_layer(resources, graph, options, nq, q_dev.get(), layer_keys, starts);
    }
    a.query_entries = starts.get();
    a.query_entry_count = int(graph.layer_starts);
  }
  // The results in one buffer, ids then distances: host outputs take one copy out, not two (a
  // round trip of about 10 us, a tenth of a batch-1 search).
  const size_t id_bytes = size_t(nq * k) * sizeof(int64_t), distance_bytes = size_t(nq * k) * sizeof(float);
  PoolBuffer<char> results(pool, int64_t(id_bytes + distance_bytes));
  auto* i_dev = reinterpret_cast<int64_t*>(results.get());
  auto* d_dev = reinterpret_cast<float*>(results.get() + id_bytes);
  a.queries = q_dev.get();
  a.nq = nq;
  a.k = int(k);
  a.filter = options.filter.bits != nullptr ? filter.get() : nullptr;
  a.filter_bits = options.filter.bits != nullptr ? options.filter.nbits : 0;
  a.distances = d_dev;
  a.ids = i_dev;
  launch_walk(resources, walk, options, a);
  auto on_host = [device](const void* p) {
    const MemoryKind kind = memory_kind(p, device);
    return kind == MemoryKind::host_pageable || kind == MemoryKind::host_pinned;
  };
  if (on_host(ids) && (distances == nullptr || on_host(distances))) {
    std::vector<char> host(id_bytes + distance_bytes);
    copy_from_device(resources.staging(), device, host.data(), results.get(), host.size(), stream);
    std::memcpy(ids, host.data(), id_bytes);
    if (distances != nullptr) std::memcpy(distances, host.data() + id_bytes, distance_bytes);
  } else {
    if (distances != nullptr) copy_from_device(resources.staging(), device, distances, d_dev, distance_bytes, stream);
    copy_from_device(resources.staging(), device, ids, i_dev, id_bytes, stream);
  }
  session.finish();
}

}  // namespace

void graph_search(Resources& resources, const GraphDevice& graph, int64_t nq, const float* queries, int64_t k,
                  const GraphSearchOptions& options, float* distances, int64_t* ids) {
  require(graph.codes.size() == 0, "the graph holds hash codes: search it with graph_search_codes");
  run_search(resources, graph, nq, queries, k, options, vector_walk, distances, ids);
}

void graph_search_codes(Resources& resources, const GraphDevice& graph, int64_t nq, const uint32_t* query_codes,
                        const GraphSearchOptions& options, int64_t* rows) {
  require(graph.codes.size() > 0 || graph.rows == 0, "the graph holds vectors: search it with graph_search");
  require(options.filter.bits == nullptr && !options.half_walk, "a hashed walk takes no filter and no half walk");
  const int64_t width = options.search_width;
  // The walk's Hamming distances are of no use to the caller, who re-ranks exactly.
  run_search(resources, graph, nq, query_codes, width, options, code_walk, nullptr, rows);
}

}  // namespace quiver::gpu
