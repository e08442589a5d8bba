// The distributed index (quiver_mpi.h) under mpirun -np 1, 2, 4 (tests/CMakeLists.txt): the same data
// spread over the ranks gives the single-process index's results; failures on one rank fail the call
// everywhere; files round-trip. Every rank runs every test; the root checks the results.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>

#include "../capi/test_util.h"
#include "cpp/core/error.h"
#include "cpp/dist/comm.h"
#include "quiver/quiver_mpi.h"

namespace {

using namespace qvtest;

struct DistFree {
  void operator()(qv_dist_index_t* index) const { qv_dist_index_free(index); }
};
using DistIndex = std::unique_ptr<qv_dist_index_t, DistFree>;

int Rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int Size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::string Describe(qv_status_t s) {
  return std::string(qv_status_string(s)) + ": " + qv_dist_last_error_message();
}

DistIndex Create(qv_context_t* ctx, const char* descriptor, int64_t dim, qv_metric_t metric = QV_METRIC_L2) {
  qv_dist_index_t* index = nullptr;
  MPI_Comm comm = MPI_COMM_WORLD;
  const qv_status_t s = qv_dist_index_create(ctx, &comm, descriptor, dim, metric, nullptr, &index);
  EXPECT_EQ(s, QV_OK) << Describe(s);
  return DistIndex(index);
}

// Rows [begin, end) of this rank's contiguous slice of n rows.
std::pair<int64_t, int64_t> MySlice(int64_t n) {
  return {n * Rank() / Size(), n * (Rank() + 1) / Size()};
}

TEST(Dist, ExactSearchMatchesOneProcess) {
  auto ctx = MakeCpuContext(2);
  const int64_t n = 1003, dim = 13, nq = 17;
  const std::vector<float> base = RandomVectors(n, dim, 3), queries = RandomVectors(nq, dim, 4);
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    DistIndex index = Create(ctx.get(), "Flat", dim, metric);
    const auto [begin, end] = MySlice(n);
    // Ids left to the index: rank 0's vectors first, so ids are rows.
    const qv_status_t added = qv_dist_index_add(index.get(), end - begin, base.data() + begin * dim, nullptr);
    ASSERT_EQ(added, QV_OK) << Describe(added);
    int64_t total = 0, local = 0;
    ASSERT_EQ(qv_dist_index_info(index.get(), nullptr, nullptr, &local, &total), QV_OK);
    EXPECT_EQ(total, n);
    for (uint32_t k : {1u, 10u, static_cast<uint32_t>(n + 4)}) {
      std::vector<float> distances(static_cast<size_t>(nq * k), -1);
      std::vector<int64_t> ids(distances.size(), -7);
      const qv_status_t s = qv_dist_index_search(index.get(), nq, queries.data(), k, nullptr, distances.data(), ids.data());
      ASSERT_EQ(s, QV_OK) << Describe(s);
      if (Rank() == 0) EXPECT_TRUE(CheckKnn(metric, base, Iota(n), dim, queries, k, distances, ids)) << k;
    }
    qv_range_result_t* raw = nullptr;
    ASSERT_EQ(qv_dist_index_range_search(index.get(), nq, queries.data(), metric == QV_METRIC_L2 ? 8.0f : 0.5f,
                                         nullptr, &raw),
              QV_OK);
    RangeResult result(raw);
    if (Rank() != 0) {
      EXPECT_EQ(raw, nullptr);
      continue;
    }
    // The single-process index's range result, hit for hit.
    qv_index_t* single_raw = nullptr;
    ASSERT_EQ(qv_index_create(ctx.get(), "Flat", dim, metric, &single_raw), QV_OK);
    Index single(single_raw);
    ASSERT_EQ(qv_index_add(single.get(), n, base.data(), nullptr), QV_OK);
    qv_range_result_t* want_raw = nullptr;
    ASSERT_EQ(qv_index_range_search(single.get(), nq, queries.data(), metric == QV_METRIC_L2 ? 8.0f : 0.5f, nullptr,
                                    &want_raw),
              QV_OK);
    RangeResult want(want_raw);
    const int64_t *got_lims, *got_ids, *want_lims, *want_ids;
    const float *got_d, *want_d;
    int64_t count = 0;
    qv_range_result_get(result.get(), &count, &got_lims, &got_ids, &got_d);
    qv_range_result_get(want.get(), &count, &want_lims, &want_ids, &want_d);
    ASSERT_EQ(std::vector<int64_t>(got_lims, got_lims + nq + 1), std::vector<int64_t>(want_lims, want_lims + nq + 1));
    for (int64_t i = 0; i < got_lims[nq]; ++i) EXPECT_NEAR(got_d[i], want_d[i], 1e-4f) << i;
  }
}

TEST(Dist, InvertedFilesShareOneModel) {
  auto ctx = MakeCpuContext(2);
  const int64_t n = 3000, dim = 16, nq = 40;
  const std::vector<float> base = ClusteredVectors(n, dim, 20, 3, 5), queries = ClusteredVectors(nq, dim, 20, 3, 6);
  DistIndex index = Create(ctx.get(), "IVF16,Flat", dim);
  const auto [begin, end] = MySlice(n);
  qv_status_t s = qv_dist_index_train(index.get(), end - begin, base.data() + begin * dim);
  ASSERT_EQ(s, QV_OK) << Describe(s);
  s = qv_dist_index_add(index.get(), end - begin, base.data() + begin * dim, nullptr);
  ASSERT_EQ(s, QV_OK) << Describe(s);
  qv_search_params_t params;
  qv_search_params_init(&params);
  params.nprobe = 4;
  std::vector<float> distances(static_cast<size_t>(nq * 10));
  std::vector<int64_t> ids(distances.size());
  s = qv_dist_index_search(index.get(), nq, queries.data(), 10, &params, distances.data(), ids.data());
  ASSERT_EQ(s, QV_OK) << Describe(s);
  if (Rank() != 0) return;
  // One process trained on the same sample in the same order: the same model, the same results.
  Index single = MakeIndex(ctx.get(), dim, QV_METRIC_L2, "IVF16,Flat");
  ASSERT_EQ(qv_index_train(single.get(), n, base.data()), QV_OK);
  ASSERT_EQ(qv_index_add(single.get(), n, base.data(), nullptr), QV_OK);
  Results want;
  ASSERT_EQ(Search(single.get(), queries, dim, 10, &params, &want), QV_OK);
  Results got{distances, ids};
  EXPECT_GE(IdOverlap(got, want, nq, 10), 0.99);
}

TEST(Dist, IdsRemovalAndFailuresAreAgreed) {
  auto ctx = MakeCpuContext(1);
  const int64_t dim = 4, per_rank = 5;
  const std::vector<float> x = RandomVectors(per_rank, dim, 10 + Rank());
  DistIndex index = Create(ctx.get(), "Flat", dim);
  std::vector<int64_t> ids(per_rank);
  for (int64_t i = 0; i < per_rank; ++i) ids[i] = 100 * Rank() + 3 * i + 1;
  ASSERT_EQ(qv_dist_index_add(index.get(), per_rank, x.data(), ids.data()), QV_OK) << qv_dist_last_error_message();
  // A duplicate on one rank fails the add on every rank, and nothing is added anywhere.
  std::vector<int64_t> again(per_rank);
  for (int64_t i = 0; i < per_rank; ++i) again[i] = 100 * Rank() + 3 * i + 2;
  if (Rank() == Size() - 1) again[per_rank - 1] = 1;  // rank 0's first id
  const qv_status_t s = qv_dist_index_add(index.get(), per_rank, x.data(), again.data());
  EXPECT_NE(s, QV_OK);
  EXPECT_TRUE(s == QV_ERR_INVALID_ARGUMENT || s == QV_ERR_REMOTE) << Describe(s);
  int64_t total = 0;
  ASSERT_EQ(qv_dist_index_info(index.get(), nullptr, nullptr, nullptr, &total), QV_OK);
  EXPECT_EQ(total, per_rank * Size());
  // Ids given on some ranks only: refused everywhere.
  if (Size() > 1)
    EXPECT_EQ(qv_dist_index_add(index.get(), per_rank, x.data(), Rank() == 0 ? nullptr : again.data()),
              QV_ERR_INVALID_ARGUMENT);
  // Removal finds ids wherever they live; any rank may name them.
  const int64_t gone[2] = {1, 100 * (Size() - 1) + 4};
  int64_t removed = 0;
  ASSERT_EQ(qv_dist_index_remove(index.get(), Rank() == 0 ? 2 : 0, gone, &removed), QV_OK);
  EXPECT_EQ(removed, Size() == 1 ? 2 : 2);
  ASSERT_EQ(qv_dist_index_info(index.get(), nullptr, nullptr, nullptr, &total), QV_OK);
  EXPECT_EQ(total, per_rank * Size() - 2);
  // The root's bad input fails the search on every rank: its own status there, QV_ERR_REMOTE elsewhere.
  std::vector<float> d(3);
  std::vector<int64_t> found(3);
  const qv_status_t bad = qv_dist_index_search(index.get(), 1, nullptr, 3, nullptr, d.data(), found.data());
  EXPECT_EQ(bad, Rank() == 0 ? QV_ERR_INVALID_ARGUMENT : QV_ERR_REMOTE) << Describe(bad);
  if (Rank() != 0) EXPECT_NE(std::string(qv_dist_last_error_message()).find("rank 0"), std::string::npos);
  // And the index still answers.
  const std::vector<float> q(x.begin(), x.begin() + dim);
  ASSERT_EQ(qv_dist_index_search(index.get(), 1, q.data(), 3, nullptr, d.data(), found.data()), QV_OK);
}

TEST(Dist, FilesRoundTrip) {
  auto ctx = MakeCpuContext(1);
  const int64_t n = 500, dim = 8, nq = 9;
  const std::vector<float> base = RandomVectors(n, dim, 20), queries = RandomVectors(nq, dim, 21);
  DistIndex index = Create(ctx.get(), "IVF4,Flat", dim);
  const auto [begin, end] = MySlice(n);
  ASSERT_EQ(qv_dist_index_train(index.get(), end - begin, base.data() + begin * dim), QV_OK);
  ASSERT_EQ(qv_dist_index_add(index.get(), end - begin, base.data() + begin * dim, nullptr), QV_OK);
  std::string prefix = "/tmp/quiver_dist_test_" + std::to_string(Size());
  if (const char* dir = std::getenv("TMPDIR")) prefix = std::string(dir) + "/quiver_dist_test_" + std::to_string(Size());
  qv_status_t s = qv_dist_index_save(index.get(), prefix.c_str());
  ASSERT_EQ(s, QV_OK) << Describe(s);
  qv_dist_index_t* raw = nullptr;
  MPI_Comm comm = MPI_COMM_WORLD;
  s = qv_dist_index_load(ctx.get(), &comm, prefix.c_str(), nullptr, &raw);
  ASSERT_EQ(s, QV_OK) << Describe(s);
  DistIndex loaded(raw);
  std::vector<float> d1(nq * 5), d2(nq * 5);
  std::vector<int64_t> i1(nq * 5), i2(nq * 5);
  ASSERT_EQ(qv_dist_index_search(index.get(), nq, queries.data(), 5, nullptr, d1.data(), i1.data()), QV_OK);
  ASSERT_EQ(qv_dist_index_search(loaded.get(), nq, queries.data(), 5, nullptr, d2.data(), i2.data()), QV_OK);
  if (Rank() == 0) EXPECT_EQ(i1, i2);
  // Ids left to the loaded index continue after the largest held.
  ASSERT_EQ(qv_dist_index_add(loaded.get(), Rank() == 0 ? 1 : 0, base.data(), nullptr), QV_OK);
  ASSERT_EQ(qv_dist_index_search(loaded.get(), 1, base.data(), 2, nullptr, d2.data(), i2.data()), QV_OK);
  if (Rank() == 0) EXPECT_TRUE(i2[0] == n || i2[1] == n);
  // A missing manifest fails everywhere.
  raw = nullptr;
  EXPECT_EQ(qv_dist_index_load(ctx.get(), &comm, (prefix + ".missing").c_str(), nullptr, &raw), QV_ERR_IO);
  EXPECT_EQ(raw, nullptr);
  MPI_Barrier(MPI_COMM_WORLD);
  if (Rank() == 0) {
    std::remove((prefix + ".manifest").c_str());
    for (int r = 0; r < Size(); ++r)
      std::remove((prefix + "." + std::to_string(r) + "-of-" + std::to_string(Size()) + ".qvi").c_str());
  }
}

// A rank that never takes part: the wait gives up after the timeout instead of hanging.
TEST(Dist, CollectivesTimeOut) {
  quiver::dist::Comm comm(MPI_COMM_SELF, 200);
  int value = 0;
  MPI_Request request;
  MPI_Irecv(&value, 1, MPI_INT, 0, 77, comm.get(), &request);  // nobody sends
  const auto t0 = std::chrono::steady_clock::now();
  try {
    comm.wait(request, "waiting for nobody");
    FAIL() << "no timeout";
  } catch (const quiver::Error& e) {
    EXPECT_EQ(e.status(), quiver::Status::remote);
    EXPECT_NE(std::string(e.what()).find("200 ms"), std::string::npos) << e.what();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(190));
  MPI_Cancel(&request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
}

// MPI is initialised by main here: qv_dist_comm_world only hands out MPI_COMM_WORLD, and
// qv_dist_finalize leaves MPI to the one who started it.
TEST(Dist, CommWorldForCallersWithoutMpiH) {
  const void* world = nullptr;
  ASSERT_EQ(qv_dist_comm_world(&world), QV_OK);
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(*static_cast<const MPI_Comm*>(world), MPI_COMM_WORLD, &same);
  EXPECT_EQ(same, MPI_IDENT);
  EXPECT_EQ(qv_dist_finalize(), QV_OK);
  int finalised = 1;
  MPI_Finalized(&finalised);
  EXPECT_EQ(finalised, 0);
  EXPECT_EQ(qv_dist_comm_world(nullptr), QV_ERR_INVALID_ARGUMENT);
}

TEST(Dist, BadArguments) {
  auto ctx = MakeCpuContext(1);
  qv_dist_index_t* index = nullptr;
  MPI_Comm comm = MPI_COMM_WORLD;
  EXPECT_EQ(qv_dist_index_create(ctx.get(), nullptr, "Flat", 4, QV_METRIC_L2, nullptr, &index), QV_ERR_INVALID_ARGUMENT);
  qv_dist_options_t options;
  ASSERT_EQ(qv_dist_options_init(&options), QV_OK);
  options.root = Size();
  EXPECT_EQ(qv_dist_index_create(ctx.get(), &comm, "Flat", 4, QV_METRIC_L2, &options, &index), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(index, nullptr);
  options.root = 0;
  options.timeout_ms = 0;
  EXPECT_EQ(qv_dist_index_create(ctx.get(), &comm, "Flat", 4, QV_METRIC_L2, &options, &index), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_dist_index_create(ctx.get(), &comm, "Bogus", 4, QV_METRIC_L2, nullptr, &index), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_dist_last_error_message()), "");
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  // One report: the root's (a failure on another rank still fails mpirun's exit status, and
  // QUIVER_MPI_TEST_ALL_RANKS=1 shows every rank's).
  if (Rank() != 0 && std::getenv("QUIVER_MPI_TEST_ALL_RANKS") == nullptr) delete ::testing::UnitTest::GetInstance()->listeners().Release(
      ::testing::UnitTest::GetInstance()->listeners().default_result_printer());
  const int result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}
