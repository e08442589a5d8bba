#include "cpp/index/ivf_payload.h"

#include <cstring>

#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"
#include "cpp/io/bytes.h"

namespace quiver {

namespace {

constexpr uint32_t kIvfPayloadVersion = 1;

void check_finite(const char* what, const std::vector<float>& values, int64_t rows, int64_t dim) {
  try {
    check_vectors(what, values.data(), rows, dim, false);
  } catch (const Error& e) {
    fail(Status::corrupt_data, "corrupt index: ", e.what());
  }
}

}  // namespace

void write_ivf_model(ByteWriter& out, const IvfModel* model) {
  out.u32(kIvfPayloadVersion);
  out.u32(model ? 1 : 0);
  if (!model) return;
  out.i64(model->nlist);
  out.i64(model->pq.m);
  out.u32(model->has_rotation() ? 1 : 0);
  out.u32(model->keep_raw ? 1 : 0);
  out.array(model->centroids.data(), model->nlist * model->dim);
  if (model->has_rotation()) out.array(model->rotation.data(), model->dim * model->dim);
  if (model->is_pq()) out.array(model->pq.codebooks.data(), model->pq.m * kPqCentroids * model->pq.dsub());
}

void write_ivf_list(ByteWriter& out, const IvfModel& model, int64_t size, const int64_t* ids, const void* codes,
                    const float* raw) {
  out.i64(size);
  out.array(ids, size);
  out.raw(codes, static_cast<size_t>(size * model.code_bytes()));
  if (model.keep_raw) out.array(raw, size * model.dim);
}

std::unique_ptr<IvfModel> read_ivf_model(ByteReader& in, const IvfSpec& spec, Metric metric, int64_t dim) {
  const uint32_t version = in.u32("IVF payload version");
  if (version != kIvfPayloadVersion)
    fail(Status::corrupt_data, "corrupt index: IVF payload version ", version, " (expected ", kIvfPayloadVersion, ")");
  const uint32_t trained = in.u32("trained flag");
  if (trained > 1) fail(Status::corrupt_data, "corrupt index: trained flag ", trained);
  if (trained == 0) return nullptr;
  const int64_t nlist = in.i64("nlist");
  const int64_t pq_m = in.i64("PQ M");
  const uint32_t has_rotation = in.u32("rotation flag");
  const uint32_t keep_raw = in.u32("raw-vector flag");
  if (nlist != spec.nlist || pq_m != spec.pq_m || has_rotation != (spec.opq_m > 0 ? 1u : 0u) ||
      keep_raw != (spec.refine ? 1u : 0u))
    fail(Status::corrupt_data, "corrupt index: the stored model (nlist ", nlist, ", PQ M ", pq_m, ", rotation ",
         has_rotation, ", raw vectors ", keep_raw, ") does not match the descriptor");
  auto model = std::make_unique<IvfModel>();
  model->metric = scoring_metric(metric);
  model->dim = dim;
  model->nlist = nlist;
  model->keep_raw = keep_raw != 0;
  in.array(model->centroids, nlist * dim, "centroids");
  check_finite("stored centroids", model->centroids, nlist, dim);
  if (has_rotation) {
    in.array(model->rotation, dim * dim, "rotation");
    check_finite("stored rotation", model->rotation, dim, dim);
  }
  if (pq_m > 0) {
    model->pq.dim = dim;
    model->pq.m = pq_m;
    in.array(model->pq.codebooks, pq_m * kPqCentroids * (dim / pq_m), "PQ codebooks");
    check_finite("stored PQ codebooks", model->pq.codebooks, pq_m * kPqCentroids, dim / pq_m);
  }
  finish_model(*model);
  return model;
}

StoredList read_ivf_list(ByteReader& in, const IvfModel& model) {
  StoredList list;
  const int64_t size = in.i64("list size");
  // Each entry takes at least its id: a larger size cannot be real (and must not be allocated).
  if (size < 0 || static_cast<uint64_t>(size) > in.remaining() / sizeof(int64_t))
    fail(Status::corrupt_data, "corrupt or truncated index: list size ", size, " exceeds the data");
  in.array(list.ids, size, "list ids");
  if (model.is_pq()) {
    in.array(list.codes, size * model.pq.m, "PQ codes");
  } else {
    in.array(list.vectors, size * model.dim, "list vectors");
    check_finite("stored vectors", list.vectors, size, model.dim);
  }
  if (model.keep_raw) {
    in.array(list.raw, size * model.dim, "raw vectors");
    check_finite("stored raw vectors", list.raw, size, model.dim);
  }
  return list;
}

}  // namespace quiver
