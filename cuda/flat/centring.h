// Centring for the fp32 mode's certified L2 passes (knn.cu, certify.h). Squared L2 distances do not
// change when base and queries move by one vector m, but the error bound of a GEMM's products grows
// with |x| |y|: on data far from the origin (every row near some offset) the bound exceeds the gaps
// between neighbours and the certificate fails. The GEMM passes then multiply x - m and y - m, m
// close to the base's mean, rounded once to float (certify.h's `centring` term covers that rounding);
// the re-rank still reads the original rows, so the results are the same.
//
// m is the mean of an evenly spaced sample of base rows: any m is correct, a good one only makes the
// bound tighter, and a sample costs no pass over the base.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace quiver::gpu {

// Rows of the sample (all of them below this).
constexpr int64_t kCentreSampleRows = 4096;

// Sums of the sample's rows: for each of the dim columns, the sum of the values then the sum of
// their squares (2 dim doubles). Row i of `samples` is base row i * n / samples.
std::vector<double> sample_sums_host(const float* base, int64_t n, int64_t dim, int64_t samples);
// The same from device memory; synchronises `stream`. workspace: sample_sums_workspace(dim) doubles.
int64_t sample_sums_workspace(int64_t dim);
std::vector<double> sample_sums_device(const float* base, int64_t n, int64_t dim, int64_t samples,
                                       double* workspace, cudaStream_t stream);

// The centre m for those sums, or an empty vector where centring would not pay: m must hold a
// large share of the rows' squared norms (centring shrinks the bound by the rest's square root).
std::vector<float> choose_centre(const std::vector<double>& sums, int64_t dim, int64_t samples);

// out = x - centre row by row, for n rows of dim floats (device memory; out may be x).
void launch_centre(const float* x, int64_t n, int64_t dim, const float* centre, float* out, cudaStream_t stream);

}  // namespace quiver::gpu
