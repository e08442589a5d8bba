// Inverted-file descriptors: what they parse into, and the message each malformed one gets.
#include <gtest/gtest.h>

#include <string>

#include "cpp/core/error.h"
#include "cpp/index/index.h"
#include "cpp/index/ivf_spec.h"

namespace quiver {
namespace {

TEST(IvfSpec, ParsesEveryForm) {
  IvfSpec s = parse_ivf_descriptor("IVF64,Flat", 37);
  EXPECT_EQ(s.nlist, 64);
  EXPECT_EQ(s.pq_m, 0);
  EXPECT_EQ(s.opq_m, 0);
  EXPECT_FALSE(s.refine);
  EXPECT_FALSE(s.host_ids);

  s = parse_ivf_descriptor("IVF1,PQ16", 48);
  EXPECT_EQ(s.nlist, 1);
  EXPECT_EQ(s.pq_m, 16);

  EXPECT_EQ(parse_ivf_descriptor("IVF10,PQ8x8", 48).pq_m, 8);

  s = parse_ivf_descriptor("OPQ16,IVF10,PQ8,Refine,HostIds", 48);
  EXPECT_EQ(s.opq_m, 16);
  EXPECT_EQ(s.pq_m, 8);
  EXPECT_TRUE(s.refine);
  EXPECT_TRUE(s.host_ids);

  s = parse_ivf_descriptor("IVF10,Flat,HostIds", 5);
  EXPECT_TRUE(s.host_ids);
  EXPECT_EQ(parse_ivf_descriptor("IVF10,PQ96", 96 * 2).pq_m, 96);
  EXPECT_EQ(parse_ivf_descriptor("IVF10,PQ48", 48).pq_m, 48);  // M = dim: one dimension each
  EXPECT_TRUE(is_ivf_descriptor("IVF10,Flat"));
  EXPECT_TRUE(is_ivf_descriptor("OPQ8,IVF10,PQ8"));
  EXPECT_FALSE(is_ivf_descriptor("Flat"));
  EXPECT_FALSE(is_ivf_descriptor("ivf10,Flat"));
}

// The descriptor is refused with invalid_argument and a message containing `expected`.
void expect_refused(const std::string& descriptor, int64_t dim, const std::string& expected) {
  try {
    parse_ivf_descriptor(descriptor, dim);
    ADD_FAILURE() << descriptor << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << descriptor;
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << descriptor << ": \"" << e.what() << "\" lacks \"" << expected << "\"";
  }
}

TEST(IvfSpec, RefusesMalformedDescriptorsNamingTheProblem) {
  expect_refused("IVF,Flat", 8, "needs nlist");
  expect_refused("IVF0,Flat", 8, "nlist = 0 must be at least 1");
  expect_refused("IVF-3,Flat", 8, "needs nlist");
  expect_refused("IVF12a,Flat", 8, "unexpected \"a\"");
  expect_refused("IVF9999999999,Flat", 8, "too large");
  expect_refused("IVF99999999,Flat", 8, "exceeds");
  expect_refused("IVF10", 8, "must be followed by");
  expect_refused("IVF10,", 8, "unknown encoding \"\"");
  expect_refused("IVF10,,Flat", 8, "unknown encoding");
  expect_refused("IVF10,HNSW32", 8, "unknown encoding \"HNSW32\"");
  expect_refused("IVF10,PQ", 48, "needs M");
  expect_refused("IVF10,PQ0", 48, "M must be at least 1");
  expect_refused("IVF10,PQ7", 48, "M = 7 does not divide dim = 48");
  expect_refused("IVF10,PQ64", 48, "M = 64 exceeds dim = 48");
  expect_refused("IVF10,PQ512", 1024, "exceeds the largest supported");
  expect_refused("IVF10,PQ8x4", 48, "8 bits");
  expect_refused("IVF10,PQ8,Refine,Refine", 48, "appears twice");
  expect_refused("IVF10,PQ8,Rerank", 48, "unknown option \"Rerank\"");
  expect_refused("IVF10,Flat,Refine", 48, "Refine re-ranks PQ codes");
  expect_refused("OPQ8,IVF10,Flat", 48, "drop \"OPQ8,\"");
  expect_refused("OPQ5,IVF10,PQ8", 48, "M = 5 does not divide dim = 48");
  expect_refused("OPQ8", 48, "expected \"IVF<nlist>\" after \"OPQ8\"");
  expect_refused("OPQ8,PQ8", 48, "expected \"IVF<nlist>\"");
  expect_refused("IVF10,Flat,", 48, "unknown option \"\"");
}

TEST(IvfSpec, NprobeAndRefineFactor) {
  EXPECT_EQ(resolve_nprobe(kNprobeDefault, 100), kDefaultNprobe);
  EXPECT_EQ(resolve_nprobe(kNprobeDefault, 3), 3);
  EXPECT_EQ(resolve_nprobe(1, 3), 1);
  EXPECT_EQ(resolve_nprobe(3, 3), 3);
  for (uint32_t bad : {0u, 4u, 0xFFFFFFFEu}) {
    try {
      resolve_nprobe(bad, 3);
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("params->nprobe = " + std::to_string(bad)), std::string::npos);
    }
  }
  EXPECT_EQ(refine_candidates(0, 10), kDefaultRefineFactor * 10);
  EXPECT_EQ(refine_candidates(3, 10), 30);
  EXPECT_EQ(refine_candidates(1, 10), 10);
  EXPECT_EQ(refine_candidates(16, 1000), kMaxK);
  EXPECT_EQ(refine_candidates(16, kMaxK), kMaxK);
}

}  // namespace
}  // namespace quiver
