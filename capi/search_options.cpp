#include "capi/search_options.h"

#include "capi/guard.h"

namespace quiver::capi {

static_assert(QV_NPROBE_DEFAULT == kNprobeDefault, "the engine's nprobe default is the C API's");
static_assert(QV_GRAPH_MAX_PROBES == kMaxGraphProbes && QV_GRAPH_MAX_WARPS_PER_QUERY == kMaxGraphWarpsPerQuery,
              "the engine's graph walk limits are the C API's");
static_assert(QV_GRAPH_VISITED_DEFAULT == int(GraphVisited::automatic) &&
                  QV_GRAPH_VISITED_HASH_TABLE == int(GraphVisited::hash_table) &&
                  QV_GRAPH_VISITED_BLOOM == int(GraphVisited::bloom) &&
                  QV_GRAPH_VISITED_CUCKOO == int(GraphVisited::cuckoo),
              "qv_graph_visited_t codes are the engine's");

namespace {

// The graph_ fields, checked whatever the index kind (0 everywhere: the backend's defaults).
GraphWalkOptions graph_walk_options(const qv_search_params_t& p) {
  require(p.graph_visited >= QV_GRAPH_VISITED_DEFAULT && p.graph_visited <= QV_GRAPH_VISITED_CUCKOO,
          "params->graph_visited = ", p.graph_visited, " is not a QV_GRAPH_VISITED_* value");
  require(p.graph_probes <= QV_GRAPH_MAX_PROBES, "params->graph_probes = ", p.graph_probes, " is outside 0 .. ",
          QV_GRAPH_MAX_PROBES);
  require(p.graph_warps_per_query <= QV_GRAPH_MAX_WARPS_PER_QUERY, "params->graph_warps_per_query = ",
          p.graph_warps_per_query, " is outside 0 .. ", QV_GRAPH_MAX_WARPS_PER_QUERY);
  require(p.graph_queries_per_warp <= 2 || p.graph_queries_per_warp == 4, "params->graph_queries_per_warp = ",
          p.graph_queries_per_warp, " is not 0, 1, 2 or 4");
  require(p.graph_queries_per_warp <= 1 || p.graph_warps_per_query <= 1, "params->graph_queries_per_warp = ",
          p.graph_queries_per_warp, " with params->graph_warps_per_query = ", p.graph_warps_per_query,
          ": a warp searching several queries cannot also share one query with other warps");
  GraphWalkOptions walk;
  walk.visited = static_cast<GraphVisited>(p.graph_visited);
  walk.probes = p.graph_probes;
  walk.warps_per_query = p.graph_warps_per_query;
  walk.queries_per_warp = p.graph_queries_per_warp;
  return walk;
}

qv_search_params_t default_search_params() {
  qv_search_params_t p{};
  p.struct_size = sizeof p;
  p.nprobe = QV_NPROBE_DEFAULT;
  return p;
}

constexpr size_t kVersions[] = {
    QV_FIELD_END(qv_search_params_t, filter_bits),   QV_FIELD_END(qv_search_params_t, nprobe),
    QV_FIELD_END(qv_search_params_t, search_width),  QV_FIELD_END(qv_search_params_t, compute_mode),
    QV_FIELD_END(qv_search_params_t, refine_factor), QV_FIELD_END(qv_search_params_t, max_range_results),
    QV_FIELD_END(qv_search_params_t, graph_queries_per_warp)};

// What the unsized qv_search_params_init writes, forever: the struct of the headers it was built
// against before qv_search_params_init_sized existed.
constexpr size_t kUnsizedInitSize = QV_FIELD_END(qv_search_params_t, max_range_results);

}  // namespace

SearchOptions search_options(const qv_search_params_t* params) {
  const qv_search_params_t p = read_params(params, default_search_params(), "params", kVersions);
  require(p.filter != nullptr || p.filter_bits == 0, "params->filter is NULL but params->filter_bits = ",
                  p.filter_bits);
  SearchOptions options;
  options.filter.bits = p.filter;
  options.filter.nbits = p.filter_bits;
  options.nprobe = p.nprobe;
  options.search_width = p.search_width;
  require(p.compute_mode >= QV_COMPUTE_FP32 && p.compute_mode <= QV_COMPUTE_BF16, "params->compute_mode = ",
          p.compute_mode, " is not a QV_COMPUTE_* value");
  options.compute_mode = static_cast<ComputeMode>(p.compute_mode);
  options.refine_factor = p.refine_factor;
  require(p.max_range_results >= 0, "params->max_range_results = ", p.max_range_results, " is negative");
  options.max_range_results = p.max_range_results;
  options.graph = graph_walk_options(p);
  return options;
}

}  // namespace quiver::capi

extern "C" {

qv_status_t qv_search_params_init_sized(qv_search_params_t* params, size_t size) {
  return quiver::capi::guarded([&] {
    quiver::capi::init_params(params, size, quiver::capi::default_search_params(), "params", quiver::capi::kVersions);
  });
}

// Parenthesised: the header's macro of this name calls the sized function.
qv_status_t(qv_search_params_init)(qv_search_params_t* params) {
  return quiver::capi::guarded([&] {
    quiver::capi::init_params(params, quiver::capi::kUnsizedInitSize, quiver::capi::default_search_params(), "params",
                              quiver::capi::kVersions);
  });
}

}  // extern "C"
