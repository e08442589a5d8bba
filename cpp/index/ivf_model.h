// The trained state of an inverted-file index, the same on every device: coarse centroids, an
// optional OPQ rotation and, for IVF-PQ, the product quantizer of the residuals.
//
// Coarse quantization uses the index's metric, as Faiss does and as the CUDA backend does (the same
// model must give the same lists on every device): vectors go to the list of their nearest centroid
// (L2) or of the centroid with the largest inner product with them (inner product; cosine, whose
// vectors arrive normalised, is inner product inside), and searches probe the nprobe best centroids
// by the same measure. The centroids themselves come from L2 k-means.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/context.h"
#include "cpp/core/metric.h"
#include "cpp/exact/knn_bf16.h"
#include "cpp/index/ivf_spec.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

// Training sample sizes: coarse k-means on at most this many vectors per list, PQ codebooks and the
// OPQ rotation on at most kPqTrainingVectors.
constexpr int64_t kCoarseTrainingPerList = 256;
constexpr int64_t kPqTrainingVectors = 65536;
// Lloyd iterations of the coarse k-means and of each PQ sub-space's k-means: twice Faiss's 10 and 25.
// On synth-1m-128, IVF1024,PQ64, mean of 4 training seeds, this raised recall@10 by 0.006 at nprobe 1
// and 0.002 at nprobe 4 (above Faiss's own training), for about twice the training time.
constexpr int64_t kCoarseIterations = 20;
constexpr int64_t kPqIterations = 50;
// Every seed of training derives from this one: training is deterministic.
constexpr uint64_t kIvfTrainingSeed = 1234;

struct IvfModel {
  Metric metric = Metric::l2;  // how entries are scored: l2 or inner_product (cosine: unit vectors)
  int64_t dim = 0;
  int64_t nlist = 0;
  std::vector<float> centroids;       // nlist x dim, in the rotated space when there is a rotation
  std::vector<float> centroid_norms;  // nlist squared norms, for the coarse search
  // The centroids in bfloat16 for the faster certified coarse search (exact/knn_bf16.h: the same
  // result as the float32 one), where the processor has it; else null.
  std::shared_ptr<const Bf16Database> bf16_centroids;
  std::vector<float> rotation;        // OPQ: dim x dim, vectors used as R x; empty: none
  ProductQuantizer pq;                // IVF-PQ codebooks of the residuals; pq.m == 0 for IVF-Flat
  bool keep_raw = false;              // IVF-PQ ",Refine": raw vectors kept for exact re-ranking

  bool has_rotation() const { return !rotation.empty(); }
  bool is_pq() const { return pq.m > 0; }
  // Bytes of one entry's code: dim floats (IVF-Flat) or m bytes (IVF-PQ).
  int64_t code_bytes() const { return is_pq() ? pq.m : dim * static_cast<int64_t>(sizeof(float)); }
  int64_t memory_bytes() const;
};

// The metric entries are scored with: inner product for cosine (vectors arrive normalised).
inline Metric scoring_metric(Metric metric) { return metric == Metric::l2 ? Metric::l2 : Metric::inner_product; }

// Trains on n x dim finite host vectors (normalised for cosine): a seeded sample, the OPQ rotation,
// coarse k-means (gpu::kmeans on a CUDA context), the PQ of the residuals. Throws invalid_argument
// when n < nlist, or n < 256 for PQ. progress (may be empty): the k-means iterations as they go,
// then the end of the PQ's training.
IvfModel train_ivf_model(Context& context, const IvfSpec& spec, Metric metric, int64_t dim, int64_t n,
                         const float* x, const ProgressFn& progress);

// Completes a model whose centroids (and rotation, codebooks) were set, e.g. after loading: the
// centroids' norms and bfloat16 copy.
void finish_model(IvfModel& model);

// x in the model's space: x itself, or R x written into storage.
const float* rotate(const IvfModel& model, ThreadPool& pool, int64_t n, const float* x,
                    std::vector<float>& storage);

// The list of each of n vectors (in the model's space): its best centroid by the model's metric,
// ties to the smaller.
void assign_lists(const IvfModel& model, ThreadPool& pool, int64_t n, const float* x, int64_t* lists);

// The nprobe best centroids of each of n queries (in the model's space) by the model's metric, best
// first: lists, and their squared L2 distances (L2) or inner products with the query (inner
// product), n x nprobe.
void probe_lists(const IvfModel& model, ThreadPool& pool, int64_t n, const float* x, int64_t nprobe,
                 float* distances, int64_t* lists);

// The model as the CUDA backend takes it (pointers into the model).
gpu::IvfModelView model_view(const IvfModel& model, bool ids_on_host);

}  // namespace quiver
