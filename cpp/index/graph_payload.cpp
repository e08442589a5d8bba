#include "cpp/index/graph_payload.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"
#include "cpp/io/bytes.h"

namespace quiver {

void write_graph_payload(ByteWriter& out, const FixedDegreeGraph& graph, const std::vector<int32_t>& entries,
                         const int64_t* ids,
                         const uint8_t* removed, const float* vectors, int64_t dim) {
  const int64_t rows = graph.rows;
  out.u32(static_cast<uint32_t>(graph.degree));
  out.i64(rows);
  out.u32(static_cast<uint32_t>(entries.size()));
  out.array(entries.data(), static_cast<int64_t>(entries.size()));
  out.array(ids, rows);
  out.array(removed, rows);
  out.array(vectors, rows * dim);
  out.array(graph.adjacency.data(), rows * graph.degree);
}

GraphPayload read_graph_payload(ByteReader& in, int64_t live, int64_t dim, int32_t degree) {
  const uint32_t stored_degree = in.u32("degree");
  if (stored_degree != static_cast<uint32_t>(degree))
    fail(Status::corrupt_data, "corrupt index: graph degree ", stored_degree, " does not match the descriptor's ",
         degree);
  const int64_t rows = in.i64("rows");
  if (rows < live || rows > INT32_MAX)
    fail(Status::corrupt_data, "corrupt index: ", rows, " graph rows for ", live, " vectors");
  GraphPayload p;
  const uint32_t n_entries = in.u32("entry point count");
  if ((rows == 0) != (n_entries == 0) || n_entries > rows)
    fail(Status::corrupt_data, "corrupt index: ", n_entries, " entry points for ", rows, " rows");
  in.array(p.entries, n_entries, "entry points");
  for (int32_t e : p.entries)
    if (e < 0 || e >= rows) fail(Status::corrupt_data, "corrupt index: entry point ", e, " of ", rows, " rows");
  // Each array() checks its bytes are present before it allocates.
  in.array(p.ids, rows, "ids");
  in.array(p.removed, rows, "removed flags");
  const int64_t removed = std::count_if(p.removed.begin(), p.removed.end(), [](uint8_t r) { return r != 0; });
  if (rows - removed != live)
    fail(Status::corrupt_data, "corrupt index: ", rows - removed, " live rows, the header says ", live);
  in.array(p.vectors, rows * dim, "vectors");
  p.graph.rows = rows;
  p.graph.degree = degree;
  in.array(p.graph.adjacency, rows * degree, "adjacency");
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* row = p.graph.row(r);
    bool ended = false;  // used slots come first
    for (int32_t j = 0; j < degree; ++j) {
      const int32_t v = row[j];
      if (v == kEmptySlot) {
        ended = true;
      } else if (v < 0 || v >= rows || ended) {
        fail(Status::corrupt_data, "corrupt index: graph row ", r, " slot ", j, " holds ", v,
             ended ? " after an empty slot" : " (outside 0 .. rows - 1)", " in a graph of ", rows, " rows");
      }
    }
  }
  try {
    check_vectors("stored vectors", p.vectors.data(), rows, dim, false);
  } catch (const Error& e) {
    fail(Status::corrupt_data, "corrupt index: ", e.what());
  }
  return p;
}

}  // namespace quiver
