#include "cpp/index/ivf_model.h"

#include <algorithm>

#include "cpp/cluster/kmeans.h"
#include "cpp/cluster/kmeans_steps.h"
#include "cpp/core/error.h"
#include "cpp/core/gather_rows.h"
#include "cpp/core/random.h"
#include "cpp/distance/vectors.h"
#include "cpp/blas/bf16.h"
#include "cpp/exact/knn.h"
#include "cpp/quantize/opq.h"

namespace quiver {

namespace {

// Seeds of the training steps, derived from kIvfTrainingSeed so that no two steps share a stream.
constexpr uint64_t kSampleSeedOffset = 0;
constexpr uint64_t kKmeansSeedOffset = 1;
constexpr uint64_t kOpqSeedOffset = 2;
constexpr uint64_t kPqSeedOffset = 3;
// A row count for which the exact engine's bfloat16 path always pays off: what remains of its
// condition is on the queries and the dimension (and the QUIVER_EXACT_GEMM=fp32 switch).
constexpr int64_t kBf16AlwaysPaysRows = int64_t{1} << 40;

// The exact engine over the centroids, by the model's metric.
Database centroid_database(const IvfModel& model) {
  Database db;
  db.x = model.centroids.data();
  db.norms = model.centroid_norms.data();
  db.n = model.nlist;
  db.dim = model.dim;
  db.metric = model.metric;
  return db;
}

}  // namespace

int64_t IvfModel::memory_bytes() const {
  int64_t bytes = static_cast<int64_t>((centroids.capacity() + centroid_norms.capacity() + rotation.capacity() +
                                        pq.codebooks.capacity()) *
                                       sizeof(float));
  if (bf16_centroids)
    bytes += (bf16_centroids->matrix.rows + kBf16PanelRows) * bf16_centroids->matrix.pairs *
                 static_cast<int64_t>(sizeof(uint32_t)) +
             static_cast<int64_t>((bf16_centroids->residual.size() + bf16_centroids->norm.size()) * sizeof(float));
  return bytes;
}

IvfModel train_ivf_model(Context& context, const IvfSpec& spec, Metric metric, int64_t dim, int64_t n,
                         const float* x, const ProgressFn& progress) {
  if (n < spec.nlist)
    fail(Status::invalid_argument, "training IVF", spec.nlist, " needs at least ", spec.nlist, " vectors, got ", n,
         " (the k-means needs a vector per list)");
  if (spec.is_pq() && n < kPqCentroids)
    fail(Status::invalid_argument, "training PQ", spec.pq_m, " needs at least ", kPqCentroids, " vectors, got ", n,
         " (each sub-quantizer has 256 centroids)");
  ThreadPool& pool = context.pool();
  IvfModel model;
  model.metric = scoring_metric(metric);
  model.dim = dim;
  model.nlist = spec.nlist;
  model.keep_raw = spec.refine;

  // A seeded sample big enough for every step: k-means takes kCoarseTrainingPerList per list, the
  // quantizers kPqTrainingVectors. The sample's order is random, so any prefix is a random subset.
  Random random(kIvfTrainingSeed + kSampleSeedOffset);
  const int64_t wanted = std::max(kCoarseTrainingPerList * spec.nlist, spec.is_pq() ? kPqTrainingVectors : 0);
  std::vector<float> sample;
  const float* train = x;
  int64_t n_train = n;
  if (n > wanted || spec.is_pq()) {
    n_train = std::min(n, wanted);
    sample = gather_rows(x, dim, sample_indices(n, n_train, random));
    train = sample.data();
  }
  const int64_t n_quantizer = std::min(n_train, kPqTrainingVectors);

  if (spec.opq_m > 0) {
    model.rotation = train_opq_rotation(context, dim, spec.opq_m, n_quantizer, train,
                                        kIvfTrainingSeed + kOpqSeedOffset);
    std::vector<float> rotated(static_cast<size_t>(n_train * dim));
    apply_rotation(pool, model.rotation.data(), dim, n_train, train, rotated.data());
    sample.swap(rotated);
    train = sample.data();
  }

  // The coarse k-means is most of the time; the PQ's (256 centroids a sub-space) the rest.
  Progress reports(progress, "train");
  reports.phase(0.0, spec.is_pq() ? 0.8 : 1.0);
  KmeansOptions options;
  options.progress = reports.nested();
  options.iterations = kCoarseIterations;
  options.seed = kIvfTrainingSeed + kKmeansSeedOffset;
  options.max_points_per_centroid = kCoarseTrainingPerList;
  model.centroids.resize(static_cast<size_t>(spec.nlist * dim));
  std::vector<int64_t> labels(static_cast<size_t>(n_train));
  if (context.device() == DeviceKind::cuda) {
    gpu::kmeans(context.gpu(), dim, n_train, train, spec.nlist, options, model.centroids.data(), labels.data());
  } else {
    kmeans(pool, dim, n_train, train, spec.nlist, options, model.centroids.data(), labels.data());
  }
  finish_model(model);

  if (spec.is_pq()) {
    // Residuals to the list each vector will join: k-means' own L2 assignment, or for inner product
    // the list of largest inner product (assign_lists), as add encodes them.
    if (model.metric != Metric::l2) assign_lists(model, pool, n_quantizer, train, labels.data());
    std::vector<float> residuals(static_cast<size_t>(n_quantizer * dim));
    for (int64_t i = 0; i < n_quantizer; ++i)
      for (int64_t d = 0; d < dim; ++d)
        residuals[i * dim + d] = train[i * dim + d] - model.centroids[labels[i] * dim + d];
    PqTrainingOptions pq_options;
    pq_options.iterations = kPqIterations;
    pq_options.max_training_vectors = kPqTrainingVectors;
    model.pq = train_product_quantizer(context, dim, spec.pq_m, n_quantizer, residuals.data(),
                                       kIvfTrainingSeed + kPqSeedOffset, pq_options);
    reports.reach(1.0);
  }
  return model;
}

void finish_model(IvfModel& model) {
  model.centroid_norms = squared_norms(model.centroids.data(), model.nlist, model.dim);
  model.bf16_centroids.reset();
  if (bf16_gemm_available())
    model.bf16_centroids = std::make_shared<const Bf16Database>(make_bf16_database(centroid_database(model)));
}

const float* rotate(const IvfModel& model, ThreadPool& pool, int64_t n, const float* x,
                    std::vector<float>& storage) {
  if (!model.has_rotation()) return x;
  storage.resize(static_cast<size_t>(n * model.dim));
  apply_rotation(pool, model.rotation.data(), model.dim, n, x, storage.data());
  return storage.data();
}

void assign_lists(const IvfModel& model, ThreadPool& pool, int64_t n, const float* x, int64_t* lists) {
  std::vector<float> distances(static_cast<size_t>(n));
  probe_lists(model, pool, n, x, 1, distances.data(), lists);
}

void probe_lists(const IvfModel& model, ThreadPool& pool, int64_t n, const float* x, int64_t nprobe,
                 float* distances, int64_t* lists) {
  const Database db = centroid_database(model);
  // The centroids are packed once, so only the queries' packing must pay off: the row count that
  // the exact engine asks for does not apply.
  if (model.bf16_centroids && bf16_search_pays_off(n, kBf16AlwaysPaysRows, model.dim)) {
    exact_knn_bf16(pool, db, *model.bf16_centroids, Queries{x, n}, nprobe, IdFilter{}, distances, lists);
  } else {
    exact_knn(pool, db, Queries{x, n}, nprobe, IdFilter{}, distances, lists);
  }
}

gpu::IvfModelView model_view(const IvfModel& model, bool ids_on_host) {
  gpu::IvfModelView view;
  view.metric = model.metric;
  view.dim = model.dim;
  view.nlist = model.nlist;
  view.centroids = model.centroids.data();
  view.rotation = model.has_rotation() ? model.rotation.data() : nullptr;
  view.pq_m = model.pq.m;
  view.pq_codebooks = model.is_pq() ? model.pq.codebooks.data() : nullptr;
  view.keep_raw = model.keep_raw;
  view.ids_on_host = ids_on_host;
  return view;
}

}  // namespace quiver
