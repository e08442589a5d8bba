// bfloat16 rounding, packing and the dispatch to the AVX-512 BF16 kernel (portable code).
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "cpp/blas/bf16.h"
#include "cpp/core/error.h"

namespace quiver {

// In bf16_gemm_avx512bf16.cpp; a and b are Bf16Matrix::data. Returns false when its scratch cannot
// be allocated.
bool bf16_gemm_avx512bf16(int64_t m, int64_t n, int64_t pairs, float alpha, const uint32_t* a,
                          int64_t a_row_begin, const uint32_t* b, int64_t b_row_begin, float* c,
                          int64_t ldc);

namespace {

constexpr std::align_val_t kStorageAlign{64};  // a cache line: panel rows load with aligned loads
constexpr uint32_t kSignBit = 0x80000000u;
constexpr uint32_t kExponentBits = 0x7f800000u;
constexpr uint32_t kQuietBit = 0x00400000u;  // the leading mantissa bit: set in a quiet NaN
// Independent partial sums of the residual, so the double additions do not wait on each other.
constexpr int kResidualSums = 4;

uint32_t float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The bits of float x rounded to bfloat16 (float_to_bf16), as a float's: the low half is zero.
// Branch-free, so that the loops over a row vectorise.
inline uint32_t round_bits(uint32_t u) {
  // Round to nearest, ties to even: add just under half a unit of the kept part, plus its lowest
  // bit. A carry into the exponent is the right result, up to and including infinity.
  uint32_t r = u + 0x7fffu + ((u >> 16) & 1u);
  // A subnormal result (exponent field 0) is read as zero by vdpbf16ps: make it zero here, so the
  // packed value is the one multiplied and the residual accounts for it.
  r = (r & kExponentBits) == 0 ? (u & kSignBit) : r;
  // NaN: truncated, made quiet (truncation alone could leave a NaN whose payload was all low bits
  // as infinity).
  r = (u & ~kSignBit) > kExponentBits ? (u | kQuietBit) : r;
  return r & 0xffff0000u;
}

}  // namespace

uint16_t float_to_bf16(float x) { return static_cast<uint16_t>(round_bits(float_bits(x)) >> 16); }

float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

bool bf16_gemm_available() {
  static const bool available =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bf16");
  return available;
}

void Bf16Free::operator()(uint32_t* p) const noexcept { ::operator delete[](p, kStorageAlign); }

Bf16Matrix pack_bf16(const float* x, int64_t n, int64_t k, float* residual) {
  require(n >= 0, "pack_bf16: n = ", n, " is negative");
  require(k >= 0, "pack_bf16: k = ", k, " is negative");
  Bf16Matrix out;
  out.rows = n;
  out.cols = k;
  out.pairs = (k + 1) / 2;
  const int64_t panels = (n + kBf16PanelRows - 1) / kBf16PanelRows;
  const int64_t panel_words = out.pairs * kBf16PanelRows;
  require(panels == 0 || panel_words <= std::numeric_limits<int64_t>::max() / 4 / panels,
          "pack_bf16: ", n, " x ", k, " is too large");
  const size_t words = static_cast<size_t>(panels * panel_words);
  if (words == 0) {
    if (residual)
      for (int64_t i = 0; i < n; ++i) residual[i] = 0.0f;
    return out;
  }
  out.data.reset(new (kStorageAlign) uint32_t[words]);
  uint32_t* data = out.data.get();

  // One row at a time: rounded into a contiguous buffer (vectorised), then its pairs stored into
  // the panel's column (one word every kBf16PanelRows).
  std::vector<uint32_t> rounded(static_cast<size_t>(2 * out.pairs), 0u);
  for (int64_t panel = 0; panel < panels; ++panel) {
    uint32_t* dst = data + panel * panel_words;
    for (int64_t r = 0; r < kBf16PanelRows; ++r) {
      const int64_t i = panel * kBf16PanelRows + r;
      if (i >= n) {  // padding rows
        for (int64_t p = 0; p < out.pairs; ++p) dst[p * kBf16PanelRows + r] = 0;
        continue;
      }
      const float* row = x + i * k;
      uint32_t* bits = rounded.data();  // bits[k] stays 0 when k is odd
      for (int64_t j = 0; j < k; ++j) bits[j] = round_bits(float_bits(row[j]));
      for (int64_t p = 0; p < out.pairs; ++p)
        dst[p * kBf16PanelRows + r] = (bits[2 * p] >> 16) | bits[2 * p + 1];
      if (!residual) continue;
      double squared[kResidualSums] = {};
      int64_t j = 0;
      for (; j + kResidualSums <= k; j += kResidualSums)
        for (int s = 0; s < kResidualSums; ++s) {
          const double e = static_cast<double>(row[j + s]) - bits_float(bits[j + s]);
          squared[s] += e * e;
        }
      for (; j < k; ++j) {
        const double e = static_cast<double>(row[j]) - bits_float(bits[j]);
        squared[0] += e * e;
      }
      const double norm = std::sqrt((squared[0] + squared[1]) + (squared[2] + squared[3]));
      // Rounded up, so the float stays an upper bound.
      float bound = static_cast<float>(norm);
      if (static_cast<double>(bound) < norm) bound = std::nextafter(bound, std::numeric_limits<float>::infinity());
      residual[i] = bound;
    }
  }
  return out;
}

void gemm_abt_bf16(int64_t m, int64_t n, float alpha, const Bf16Matrix& a, int64_t a_row_begin,
                   const Bf16Matrix& b, int64_t b_row_begin, float* c, int64_t ldc) {
  if (!bf16_gemm_available()) fail(Status::unsupported, "gemm_abt_bf16: this processor lacks AVX-512 BF16");
  require(a.cols == b.cols, "gemm_abt_bf16: a has ", a.cols, " columns, b has ", b.cols);
  require(m >= 0 && n >= 0, "gemm_abt_bf16: m = ", m, ", n = ", n, " (must be >= 0)");
  require(a_row_begin >= 0 && a_row_begin <= a.rows - m, "gemm_abt_bf16: rows [", a_row_begin, ", ",
          a_row_begin + m, ") of a, which has ", a.rows);
  require(b_row_begin >= 0 && b_row_begin <= b.rows - n, "gemm_abt_bf16: rows [", b_row_begin, ", ",
          b_row_begin + n, ") of b, which has ", b.rows);
  require(ldc >= n, "gemm_abt_bf16: ldc = ", ldc, " < n = ", n);
  if (m == 0 || n == 0) return;
  if (!bf16_gemm_avx512bf16(m, n, a.pairs, alpha, a.data.get(), a_row_begin, b.data.get(),
                            b_row_begin, c, ldc))
    fail(Status::out_of_host_memory, "gemm_abt_bf16: no memory for the kernel's scratch");
}

}  // namespace quiver
