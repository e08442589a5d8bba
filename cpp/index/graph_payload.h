// The saved form of a graph index (after the common header, cpp/io/index_io.h), little-endian:
//   u32 degree | i64 rows | u32 n_entries | n_entries x i32 entry points | rows x i64 ids | rows x u8 removed | rows x dim f32 vectors |
//   rows x degree i32 adjacency
// rows counts tombstones too (the header's count does not). Reading checks every size against the
// bytes present before allocating, and every stored neighbour id against rows, so a damaged file is
// corrupt_data and never a graph that search would follow out of bounds.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/graph/fixed_degree_graph.h"

namespace quiver {

class ByteReader;
class ByteWriter;

struct GraphPayload {
  std::vector<int64_t> ids;
  std::vector<uint8_t> removed;
  std::vector<float> vectors;
  FixedDegreeGraph graph;
  std::vector<int32_t> entries;
};

// Writes rows = graph.rows rows of the given arrays.
void write_graph_payload(ByteWriter& out, const FixedDegreeGraph& graph, const std::vector<int32_t>& entries,
                         const int64_t* ids,
                         const uint8_t* removed, const float* vectors, int64_t dim);

// live: the header's count, which must equal the rows not removed; degree: the descriptor's R.
GraphPayload read_graph_payload(ByteReader& in, int64_t live, int64_t dim, int32_t degree);

}  // namespace quiver
