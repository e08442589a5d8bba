// The certificate of the fp32 mode (gpu.h's knn): a pass ranks every row by an approximate key from
// a fast GEMM, keeps the kc best per query, and re-ranks those with the exact float32 distance
// (exact_distances.h). The result is the exact one when no row outside the kc can beat the k-th
// exact distance found; this file bounds the approximate keys' error rigorously and checks that,
// per query, on the device.
//
// For a query x and a base row y (real values of the float inputs), K(y) = ||y||^2 - 2<x, y> (L2) or
// -<x, y> (similarities), and the pass's key s(y) is K computed with a GEMM G~ of <x, y> in float:
//   |G~ - <x, y>| <= r_x |y~| + |x| r_y + acc |x~| |y~| + absolute
// where x~, y~ are the GEMM's inputs (x, y themselves for fp32; rounded to TF32 for tf32, with
// r_x = ||x - x~|| bounded per element by one TF32 ulp, 0 where the value is exact in TF32) and acc
// covers the accumulation (any order, tensor-core truncation included). L2 adds ||y||^2 from the
// norms (relative error `norms`) and one float rounding. The bound for rows outside the kc takes the
// base's largest ||y|| and r_y, so only two numbers per base are needed.
//
// Centred passes (L2 only, centring.h) multiply x~ = fl(x - m) and y~ = fl(y - m): the bound above
// then holds for the centred floats, and ||(x - y) - (x~ - y~)|| <= u (|x - m| + |y - m|) (u: float's
// unit roundoff, one rounding per value) moves the distance's square root by at most that much.
//
// A query is certified when (L2) (1 - rerank) (s_kc - E + ||x||^2) > F_k, or (similarities)
// s_kc - E - rerank |x| max|y| > F_k, where s_kc is the kc-th approximate key, E the bound above and
// F_k the k-th smallest exact key of the candidates; or when fewer than kc rows were selected (every
// allowed row is then a candidate). Every row outside the kc then has an exact key above F_k, so
// the candidates' k best (ties to the smaller row) are the search's. Bounds are evaluated in double
// with relative slack; anything that could overflow float fails the certificate.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// The constants of the bound for one kind of GEMM (see above).
struct CertifyModel {
  bool l2 = true;
  bool rounded_inputs = false;  // GEMM inputs rounded to TF32: the residual norms enter the bound
  double accumulation = 0;      // acc, relative to |x~| |y~|
  double norms = 0;             // relative error of the base norms added to L2 keys
  double rerank = 0;            // relative error of the exact key (exact_distances.h)
  double absolute = 0;          // underflow: flushed products and sums
  double centring = 0;          // relative error of each GEMM input against x - m (0: not centred)
};

// The model for an exact-search pass whose GEMM is cuBLAS SGEMM (tf32 == false) or TF32 on the
// float inputs (tf32 == true), for vectors of `dim` values. SGEMM is modelled as TF32 when the
// environment asks cuBLAS to round or emulate it (NVIDIA_TF32_OVERRIDE=1,
// CUBLAS_EMULATE_SINGLE_PRECISION set). centred (L2 only): the inputs are centred (centring.h).
CertifyModel certify_model(bool tf32, bool l2, int64_t dim, bool centred = false);

// How a pass's GEMM rounds its float inputs, for their residual norms: to TF32 (any rounding), or to
// IEEE half by rounding to nearest (compute_modes.h's launch_to_half; infinite beyond its range).
enum class InputRounding { tf32, fp16 };

// Two numbers per base, in device memory as float bits (non-negative floats order as their bits):
// [0] an upper bound on max ||y||^2, [1] on max r_y^2 (squared residual norm of the rounded rows,
// TF32 unless said). Zero them, then accumulate any number of launches (a streamed base: one per
// chunk).
constexpr int kBaseStatsCount = 2;
// Reads the rows: both numbers for n rows of dim floats.
void launch_base_stats(const float* y, int64_t n, int64_t dim, unsigned* stats, cudaStream_t stream,
                       InputRounding rounding = InputRounding::tf32);
// Only [0], from the norms the L2 keys use: max(norms) * scale, scale = 1 + the norms' relative
// error bound (r_y is left alone: for GEMMs on exact float inputs).
void launch_norms_max(const float* norms, int64_t n, float scale, unsigned* stats, cudaStream_t stream);

// Per query, in double: stats[2q] = ||x||^2, stats[2q + 1] = r_x^2 (the rounded query's residual).
void launch_query_stats(const float* x, int64_t nq, int64_t dim, double* stats, cudaStream_t stream,
                        InputRounding rounding = InputRounding::tf32);

// flags[q] = 1 when query q is certified, else 0, for nq queries: approx_keys / approx_rows (nq x kc,
// the pass's selection, sorted, missing rows as the selection's sentinel), exact_keys / exact_rows
// (nq x k, the candidates' k best by exact key), query_stats (launch_query_stats of these queries),
// base_stats (of the whole base); bounds (nq, or nullptr): launch_split_bounds's, where the
// selection came from truncated split lists. Device memory.
void launch_certify(const CertifyModel& model, const float* approx_keys, const int32_t* approx_rows,
                    int64_t kc, const float* exact_keys, const int32_t* exact_rows, int64_t k, int64_t nq,
                    const double* query_stats, const unsigned* base_stats, uint8_t* flags, cudaStream_t stream,
                    const float* bounds = nullptr);

// The fused TF32 pass (tf32_select.h) keeps split_kc keys of each split, sorted, +inf past a
// split's rows; with split_kc below the pass's candidates, a row a full split dropped has a key at
// least that split's last. bounds[q] = the smallest last key over query q's splits (+inf where no
// split is full), for nq queries: keys nq x splits * split_kc. Device memory. With `lower`, bounds
// already holds the splits of other rows of the base (a base searched in parts) and keeps the lower.
void launch_split_bounds(const float* keys, int64_t nq, int64_t splits, int64_t split_kc, float* bounds,
                         cudaStream_t stream, bool lower = false);

}  // namespace quiver::gpu
