// certify.h's per-query test as device code, for the kernels that certify (certify.cu's, and
// exact_distances.cu's fused finish of small candidate sets), and the statistics' pieces.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/flat/certify.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

// Relative slack on every quantity of the bound (double sums of float values, square roots).
constexpr double kCertifySlack = 0x1p-20;
constexpr double kFloatUnit = 0x1p-24;  // float's unit roundoff (round to nearest)
// Keys whose float evaluation could overflow are not bounded (the certificate fails).
constexpr double kMaxCertifiedMagnitude = 0x1p120;

// ---- The statistics' pieces: certify.cu's kernels, and gemv_select.cu's, which gather a small
// batch's statistics as they go. ----

// An upper bound on |v - tf32(v)| for any rounding of v to TF32 (truncation or to nearest): one TF32
// ulp, 0 where v is exact in TF32; subnormals may be flushed (|v|); no bound for inf / NaN.
__device__ __forceinline__ float tf32_error(float v) {
  const unsigned bits = __float_as_uint(v) & 0x7fffffffu;
  const unsigned exponent = bits >> 23;
  if (exponent == 0xffu) return __int_as_float(0x7f800000);
  if (exponent == 0) return __uint_as_float(bits);
  if ((bits & 0x1fffu) == 0) return 0.f;
  // 2^(e - 10) for the binade [2^e, 2^(e+1)); below 2^-126 the bound 2^-126 is used.
  return exponent > 10 ? __uint_as_float((exponent - 10) << 23) : __uint_as_float(1u << 23);
}

// |v - fp16(v)| for rounding to nearest (launch_to_half's), exact in float: the rounded value lies
// within a factor 2 of v, or is 0 (v itself then). +inf where v becomes infinite or is NaN.
__device__ __forceinline__ float fp16_error(float v) {
  const __half h = __float2half_rn(v);
  if (__hisinf(h) || __hisnan(h)) return __int_as_float(0x7f800000);
  return fabsf(v - __half2float(h));
}

template <InputRounding R>
__device__ __forceinline__ float rounding_error(float v) {
  return R == InputRounding::fp16 ? fp16_error(v) : tf32_error(v);
}

// Rows are read by kStatsLanesPerRow lanes each, with 16-byte loads where rows allow: several loads
// in flight per lane, two shuffle steps per row.
constexpr int kStatsLanesPerRow = 4;

// This lane's share of one row's (sum of squares, sum of squared rounding errors), in double, then
// the row's sums in every lane of its group. row >= n contributes zeros.
template <InputRounding R = InputRounding::tf32>
__device__ __forceinline__ void row_sums(const float* y, int64_t n, int64_t dim, bool vec4, int64_t row, int sub,
                                         double* ss, double* rr) {
  double s = 0, e = 0;
  auto add = [&](float v) {
    const double err = rounding_error<R>(v);
    s = fma(double(v), double(v), s);
    e = fma(err, err, e);
  };
  if (row < n) {
    const float* r = y + row * dim;
    if (vec4) {
      const float4* r4 = reinterpret_cast<const float4*>(r);
#pragma unroll 4
      for (int64_t i = sub; i < dim / 4; i += kStatsLanesPerRow) {
        const float4 v = __ldg(r4 + i);
        add(v.x);
        add(v.y);
        add(v.z);
        add(v.w);
      }
    } else {
#pragma unroll 4
      for (int64_t i = sub; i < dim; i += kStatsLanesPerRow) add(__ldg(r + i));
    }
  }
#pragma unroll
  for (int d = 1; d < kStatsLanesPerRow; d *= 2) {
    s += __shfl_xor_sync(kFullWarp, s, d);
    e += __shfl_xor_sync(kFullWarp, e, d);
  }
  *ss = s;
  *rr = e;
}

// An upper bound of a non-negative double as float bits (for atomicMax).
__device__ __forceinline__ unsigned upper_bits(double v) {
  return __float_as_uint(__double2float_ru(v * (1 + kCertifySlack)));
}

// Whether the pass's keys of this query cannot have overflowed float (nor its statistics).
__device__ inline bool keys_in_range(const CertifyModel& m, double x2, double rx2, double y2, double ry2) {
  constexpr double kSlack = kCertifySlack;
  if (!isfinite(x2) || !isfinite(y2) || !isfinite(ry2) || !isfinite(rx2)) return false;
  const double xt = (sqrt(x2) + (m.rounded_inputs ? sqrt(rx2) : 0)) * (1 + kSlack);
  const double yt = (sqrt(y2) + (m.rounded_inputs ? sqrt(ry2) : 0)) * (1 + kSlack);
  const double product = (m.l2 ? 2 : 1) * xt * yt * (1 + m.accumulation);
  return product + (m.l2 ? y2 * (1 + m.norms) : 0) < kMaxCertifiedMagnitude;
}

// certify.h's test for a query whose selection is full: s the kc-th approximate key, f the k-th
// exact key, x2 / rx2 the query's statistics, y2 / ry2 the base's.
__device__ inline bool certified(const CertifyModel& m, double s, double f, double x2, double rx2, double y2,
                                 double ry2) {
  constexpr double kSlack = kCertifySlack;
  if (!isfinite(s) || !isfinite(f) || !isfinite(y2) || !isfinite(ry2) || !isfinite(rx2)) return false;
  const double x = sqrt(x2) * (1 + kSlack);
  const double y = sqrt(y2) * (1 + kSlack);
  const double rx = m.rounded_inputs ? sqrt(rx2) * (1 + kSlack) : 0;
  const double ry = m.rounded_inputs ? sqrt(ry2) * (1 + kSlack) : 0;
  const double xt = x + rx, yt = y + ry;  // bounds on the GEMM inputs' norms
  // |G~ - <x, y>| for every row.
  const double g = (rx * yt + x * ry + m.accumulation * xt * yt + m.absolute) * (1 + kSlack);
  double lower;
  if (m.l2) {
    const double product = 2 * xt * yt * (1 + m.accumulation), norm = y * y * (1 + m.norms);
    if (!(product + norm < kMaxCertifiedMagnitude)) return false;
    // Key error: the product (twice), the norm, one rounding of their sum.
    const double e = (2 * g + m.norms * y * y + kFloatUnit * (product + norm) + m.absolute) * (1 + kSlack);
    // D >= s - e + ||x||^2 for a row outside the kc, whose exact key is at least (1 - rerank) * D.
    lower = s - e + x2 * (1 - kSlack);
    if (m.centring > 0) {
      // D was of the centred floats: the true distance's root is smaller by at most u (|x - m| +
      // |y - m|), with |x - m| <= |x~| / (1 - u).
      const double shift = m.centring * (x + y) / (1 - m.centring) * (1 + kSlack);
      const double root = sqrt(fmax(lower, 0.0)) * (1 - kSlack) - shift;
      lower = root > 0 ? root * root * (1 - kSlack) : 0;
    }
    lower *= 1 - m.rerank;
  } else {
    if (!(xt * yt * (1 + m.accumulation) < kMaxCertifiedMagnitude)) return false;
    // ... at least -<x, y> - rerank |x| |y| >= s - g - rerank |x| max|y|.
    lower = s - g - m.rerank * x * y;
  }
  lower -= fabs(lower) * kSlack + m.absolute;
  return lower > f;
}

// One query: last_key / last_row the kc-th entry of its selection, kth_key / kth_row the k-th of
// its exact ranking; query_stats its two statistics, base_stats the base's (certify.h). bound: what
// the approximate key of a row the selection left out may be as low as besides last_key (the fused
// pass's truncated splits, certify.h's launch_split_bounds), +inf where only last_key bounds them.
__device__ inline bool certify_query(const CertifyModel& m, float last_key, int32_t last_row, float kth_key,
                                     int32_t kth_row, const double* query_stats, const unsigned* base_stats,
                                     float bound) {
  constexpr int32_t kNone = SentinelValue<int32_t>::value;
  const double x2 = query_stats[0], rx2 = query_stats[1];
  const double y2 = double(__uint_as_float(base_stats[0])), ry2 = double(__uint_as_float(base_stats[1]));
  // Fewer than kc allowed rows: every one was re-ranked, unless a key overflowed to NaN (the
  // selection drops NaN keys), which finite inputs within float's range cannot make.
  const bool truncated = bound < __int_as_float(0x7f800000);
  if (last_row == kNone && !truncated) return keys_in_range(m, x2, rx2, y2, ry2);
  if (kth_row == kNone) return false;  // cannot happen with kc > k full candidates; refuse rather than trust
  return certified(m, last_row == kNone ? bound : fminf(last_key, bound), kth_key, x2, rx2, y2, ry2);
}

}  // namespace quiver::gpu
