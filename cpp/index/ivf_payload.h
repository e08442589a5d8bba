// The saved form of an inverted-file index, the same for the CPU and the GPU kinds, so an index moves
// between devices by save and load. After the common header (io/index_io.h), little-endian:
//   u32 payload version | u32 trained
//   trained only: i64 nlist | i64 pq_m | u32 has_rotation | u32 keep_raw   (must match the descriptor)
//                 centroids nlist x dim f32 | rotation dim x dim f32 (OPQ) | codebooks pq_m x 256 x dsub f32 (PQ)
//                 per list, in list order: i64 size | ids size x i64 | codes size x code_bytes
//                 (IVF-Flat: the vectors' f32; IVF-PQ: M bytes each) | raw size x dim f32 (Refine)
// An untrained index has no model and no entries.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpp/index/ivf_model.h"
#include "cpp/index/ivf_spec.h"

namespace quiver {

class ByteReader;
class ByteWriter;

// The entries of one list as stored: vectors for IVF-Flat (its codes), codes for IVF-PQ, raw
// vectors for Refine.
struct StoredList {
  std::vector<int64_t> ids;
  std::vector<uint8_t> codes;
  std::vector<float> vectors;
  std::vector<float> raw;
  int64_t size() const { return static_cast<int64_t>(ids.size()); }
};

// Writes the header part and the model (model == nullptr: untrained).
void write_ivf_model(ByteWriter& out, const IvfModel* model);
// One list; codes: size x model.code_bytes() bytes (IVF-Flat: the floats); raw: size x dim or nullptr.
void write_ivf_list(ByteWriter& out, const IvfModel& model, int64_t size, const int64_t* ids, const void* codes,
                    const float* raw);

// Reads what write_ivf_model wrote, checked against the descriptor's spec; nullptr when untrained.
// Throws corrupt_data (truncated data, a mismatch with the descriptor, non-finite values).
std::unique_ptr<IvfModel> read_ivf_model(ByteReader& in, const IvfSpec& spec, Metric metric, int64_t dim);
// One list; throws corrupt_data on truncated data or non-finite vectors.
StoredList read_ivf_list(ByteReader& in, const IvfModel& model);

}  // namespace quiver
