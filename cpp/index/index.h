// The index interface every kind implements. The public members validate arguments once, for every
// kind, then call the kind's do_* member; the kinds assume valid input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "cpp/core/compute_mode.h"
#include "cpp/core/context.h"
#include "cpp/core/metric.h"
#include "cpp/core/progress.h"
#include "cpp/exact/range.h"
#include "cpp/metric/objects.h"
#include "cpp/select/topk.h"

namespace quiver {

class ByteWriter;
class ByteReader;

// Index kinds as stored in files; never renumber.
enum class IndexKind : uint32_t {
  flat = 1,
  ivf_flat = 2,
  ivf_pq = 3,
  graph = 4,
  metric_flat = 5,       // brute force over a metric space ("Flat" of L1, L-infinity, edit distance)
  list_of_clusters = 6,  // "LC<b>"
  sss = 7,               // "SSS<alpha>"
  sharded = 8,           // "Sharded<S>,<kind>" (cpp/multi/)
  replicated = 9,        // "Replicated<R>,<kind>"
  routed = 10,           // "Routed<S>,LC<b>"
};

// SearchOptions::nprobe when the caller leaves it to the index (QV_NPROBE_DEFAULT).
constexpr uint32_t kNprobeDefault = 0xFFFFFFFFu;

// The visited set of a graph index's walk on a CUDA device (qv_graph_visited_t; gpu::VisitedSet).
enum class GraphVisited : int32_t { automatic = 0, hash_table = 1, bloom = 2, cuckoo = 3 };

// Largest GraphWalkOptions::probes and warps_per_query (the CUDA graph search's limits).
constexpr uint32_t kMaxGraphProbes = 8;
constexpr uint32_t kMaxGraphWarpsPerQuery = 16;

// How graph indexes walk on a CUDA device (SONG, cpp/backend/gpu_graph.h's GraphSearchOptions); CPU
// searches ignore it. 0 / automatic in each: the backend's default.
struct GraphWalkOptions {
  GraphVisited visited = GraphVisited::automatic;
  uint32_t probes = 0;            // nodes expanded per iteration, 1 .. kMaxGraphProbes; 0: 1
  uint32_t warps_per_query = 0;   // warps sharing a query, 1 .. kMaxGraphWarpsPerQuery; 0: automatic
  uint32_t queries_per_warp = 0;  // 1, 2 or 4 (then warps_per_query <= 1); 0: 1
};

struct SearchOptions {
  IdFilter filter;
  // Inverted-file indexes: lists visited, 1 .. nlist, or kNprobeDefault; other kinds ignore it.
  uint32_t nprobe = kNprobeDefault;
  // Graph indexes: the candidate pool of the beam search, raised to k; 0: the index's default.
  uint32_t search_width = 0;
  ComputeMode compute_mode = ComputeMode::fp32;
  // ",Refine" indexes: refine_factor * k candidates are re-ranked exactly; 0: the index's default.
  uint32_t refine_factor = 0;
  // Range searches: the most hits one query may have (more: Status::too_many_results); 0: no limit.
  int64_t max_range_results = 0;
  // Graph indexes searched on a CUDA device.
  GraphWalkOptions graph;
  // Internal (no C API): called on the searching thread as the results of query rows [0, rows)
  // become final in the outputs (device outputs: written by the device), rows increasing, the last
  // call with every row; lets a composite merge the first rows while the rest are searched. Kinds
  // that do not report (all but the GPU inverted files) never call it: every row is final when the
  // search returns.
  std::function<void(int64_t rows)> rows_done;
  // Internal (no C API): set by Index::search and range_search for a kind that prepares its queries a
  // slice at a time (prepares_query_slices()): the queries are then the caller's as given (unchecked,
  // maybe device memory). Unset, they are prepared already; a composite's parts always get them so.
  bool prepare_query_slices = false;
  // Internal (no C API): set by Index::search (and a replicated index, per slice) for a kind that
  // checks host queries as it searches (checks_queries_while_searching()): the queries' rows are
  // not checked yet; do_search calls it for every row before it returns, so the check runs beside
  // the device's work. It throws for a bad row, naming it.
  std::function<void(int64_t begin, int64_t end)> check_rows;
};

// options whose check_rows checks rows of the host queries x (dim floats a row; row 0 is the
// caller's row first_row) on the calling thread, as prepare_input would have.
SearchOptions with_row_check(const SearchOptions& options, const float* x, int64_t dim, int64_t first_row);

struct MemoryUse {
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;
};

// Largest k of k-NN searches (QV_MAX_K).
constexpr int64_t kMaxK = 2048;
// Largest vector dimension accepted.
constexpr int64_t kMaxDim = 65536;

class Index {
 public:
  // dim >= 1 for vectors; dim == 0 for the byte strings of Metric::edit.
  Index(Context& context, std::string descriptor, int64_t dim, Metric metric);
  virtual ~Index() = default;
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  Context& context() const { return context_; }
  const std::string& descriptor() const { return descriptor_; }
  int64_t dim() const { return dim_; }
  Metric metric() const { return metric_; }

  virtual IndexKind kind() const = 0;
  virtual bool is_trained() const = 0;
  virtual int64_t count() const = 0;
  // Whether id is one of the index's (live) vectors or objects.
  virtual bool holds_id(int64_t id) const = 0;
  virtual MemoryUse memory() const = 0;
  virtual DeviceKind device() const { return DeviceKind::cpu; }
  // Whether the kind's train/add/search read device memory directly (GPU kinds); others get host
  // copies of device inputs.
  virtual bool reads_device_memory() const { return device() == DeviceKind::cuda; }
  // Whether search writes outputs in its GPU's memory there, with no host round trip (a sharded
  // index then merges its parts' results on a GPU).
  virtual bool writes_device_results() const { return false; }
  // Whether a search of k neighbours with these options reads queries in device memory in place and
  // writes outputs in device memory itself; otherwise Index::search and search_strings give
  // do_search host copies of device queries and host buffers for device outputs, and copy the
  // results out.
  virtual bool searches_device_memory(int64_t /*k*/, const SearchOptions& /*options*/) const { return false; }
  // Whether do_search and do_range_search check the caller's queries (and normalise them for cosine)
  // themselves, a slice at a time where each slice is searched, when
  // SearchOptions::prepare_query_slices says so: a replicated index checks each replica's slice on
  // that replica's thread, beside the others' searches, instead of the whole batch before any of
  // them starts.
  virtual bool prepares_query_slices() const { return false; }
  // Whether do_search checks host queries itself (SearchOptions::check_rows), a tile at a time while
  // its device searches the tile before, instead of before it starts (GPU inverted files; never
  // for cosine, whose queries are normalised before the search).
  virtual bool checks_queries_while_searching() const { return false; }

  void train(int64_t n, const float* x);
  void add(int64_t n, const float* x, const int64_t* ids);
  void search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
              float* distances, int64_t* ids) const;
  RangeResult range_search(int64_t nq, const float* queries, float radius,
                           const SearchOptions& options) const;
  int64_t remove(int64_t n, const int64_t* ids);

  // The same for byte strings (Metric::edit indexes); the vector calls above refuse such an index,
  // and these refuse a vector index, with Status::unsupported.
  void add_strings(const Strings& x, const int64_t* ids);
  void search_strings(const Strings& queries, int64_t k, const SearchOptions& options, float* distances,
                      int64_t* ids) const;
  RangeResult range_search_strings(const Strings& queries, float radius, const SearchOptions& options) const;

  // The caller's callback for train / add / add_strings (qv_index_set_progress; empty: none). Each
  // reports 0 before any change (a cancel then leaves the index as it was) and 1 once done; a kind
  // with long work (a graph index's build) reports in between, through progress(), and keeps the
  // index unchanged when a report cancels.
  void set_progress(ProgressFn callback) { progress_ = std::move(callback); }

  // The kind's own part of a saved index (after the common header) and its inverse.
  virtual void save_payload(ByteWriter& out) const = 0;
  virtual void load_payload(ByteReader& in, int64_t count) = 0;

 protected:
  // The multi-device kinds validate a call once and hand it to their parts' do_* members.
  friend class CompositeIndex;

  // set_progress's callback, for the kinds' reports during train and add.
  const ProgressFn& progress() const { return progress_; }

  // Vectors are finite, normalised for cosine, n >= 1; ids validated by the kind (see IdMap).
  virtual void do_train(int64_t n, const float* x) = 0;
  virtual void do_add(int64_t n, const float* x, const int64_t* ids) = 0;
  virtual void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                         float* distances, int64_t* ids) const = 0;
  virtual RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                                      const SearchOptions& options) const = 0;
  virtual int64_t do_remove(int64_t n, const int64_t* ids) = 0;
  // Kinds that hold strings override these (valid strings, n >= 1).
  virtual void do_add_strings(const Strings& x, const int64_t* ids);
  virtual void do_search_strings(const Strings& queries, int64_t k, const SearchOptions& options,
                                 float* distances, int64_t* ids) const;
  virtual RangeResult do_range_search_strings(const Strings& queries, float radius,
                                              const SearchOptions& options) const;

 private:
  void require_vectors(const char* call) const;
  void require_strings(const char* call) const;
  void check_search(int64_t nq, int64_t k, const SearchOptions& options) const;
  void check_range_search(int64_t nq, float radius, const SearchOptions& options) const;
  // Status::too_many_results when a query has more hits than options.max_range_results.
  void check_range_cap(const RangeResult& result, const SearchOptions& options) const;
  // Runs a train / add step between the reports of 0 (may cancel) and 1 (the work is done, and the
  // callback's answer no longer matters).
  template <typename Step>
  void with_progress(const char* call, Step step);

  Context& context_;
  std::string descriptor_;
  int64_t dim_;
  Metric metric_;
  ProgressFn progress_;
};

}  // namespace quiver
