// Helpers of the quantizer tests (PQ, OPQ, look-up tables): a CPU context, a PQ with random
// codebooks, and the message of a call that must fail with invalid_argument.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/quantize/product_quantizer.h"
#include "reference.h"

namespace quiver::testing {

inline Context cpu_context(int threads = 2) {
  ContextOptions options;
  options.device = DeviceKind::cpu;
  options.cpu_threads = threads;
  return Context(options);
}

inline ProductQuantizer random_pq(int64_t dim, int64_t m, uint32_t seed) {
  ProductQuantizer pq;
  pq.dim = dim;
  pq.m = m;
  pq.codebooks = random_vectors(m * kPqCentroids, dim / m, seed);
  return pq;
}

// What f throws, expected to be invalid_argument; "no error" when it returns.
template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    return e.what();
  }
  return "no error";
}

}  // namespace quiver::testing
