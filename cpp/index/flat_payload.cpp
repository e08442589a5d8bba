#include "cpp/index/flat_payload.h"

#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"
#include "cpp/io/bytes.h"

namespace quiver {

void write_flat_payload(ByteWriter& out, const int64_t* ids, const float* vectors, int64_t count, int64_t dim) {
  out.array(ids, count);
  out.array(vectors, count * dim);
}

FlatPayload read_flat_payload(ByteReader& in, int64_t count, int64_t dim) {
  FlatPayload payload;
  in.array(payload.ids, count, "ids");
  in.array(payload.vectors, count * dim, "vectors");
  try {
    check_vectors("stored vectors", payload.vectors.data(), count, dim, false);
  } catch (const Error& e) {
    fail(Status::corrupt_data, "corrupt index: ", e.what());
  }
  return payload;
}

}  // namespace quiver
