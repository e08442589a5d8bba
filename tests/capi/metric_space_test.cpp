// Metric-space indexes on the CPU through the C API: results equal brute force references exactly
// (edit distance) or to float rounding (vectors), after adds, removals and a save/load round trip,
// with filters; bad input gets a specific status and leaves the index unchanged.
#include "metric_space_checks.h"

namespace {

using namespace qvtest;

TEST(MetricSpace, StringIndexesEqualTheReference) {
  Context ctx = MakeCpuContext();
  for (int64_t n : {1, 2, 33, 301}) {
    SCOPED_TRACE(n);
    CheckStringIndexes(ctx.get(), n, 37);
  }
}

TEST(MetricSpace, VectorIndexesEqualTheReference) {
  Context ctx = MakeCpuContext();
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_L1, QV_METRIC_LINF}) {
    for (int64_t dim : {1, 3, 17}) {
      SCOPED_TRACE(std::string(MetricName(metric)) + " dim " + std::to_string(dim));
      CheckVectorIndexes(ctx.get(), metric, 203, dim, 29);
    }
  }
}

// Removes every third id, adds in small batches (inserts, not rebuilds), then checks against the
// reference over what the index holds; save/load keeps the same answers.
TEST(MetricSpace, AddsRemovalsAndReloadKeepResultsExact) {
  Context ctx = MakeCpuContext();
  const StringSet words = RandomWords(400, 3);
  const StringSet queries = QueryWords(words, 31, 4);
  for (const char* descriptor : {"Flat", "LC8", "SSS0.5"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeStringIndex(ctx.get(), descriptor);
    ASSERT_TRUE(index);
    QV_ASSERT_OK(qv_index_add_strings(index.get(), 300, words.offsets.data(), words.bytes.data(), nullptr));
    std::vector<int64_t> removed_ids;
    for (int64_t id = 0; id < 300; id += 3) removed_ids.push_back(id);
    int64_t removed = 0;
    QV_ASSERT_OK(qv_index_remove(index.get(), static_cast<int64_t>(removed_ids.size()), removed_ids.data(), &removed));
    EXPECT_EQ(removed, 100);
    for (int64_t first = 300; first < 400; first += 25) {
      std::vector<int64_t> offsets(words.offsets.begin() + first, words.offsets.begin() + first + 26);
      std::vector<int64_t> ids(25);
      for (int64_t i = 0; i < 25; ++i) ids[i] = first + i;
      QV_ASSERT_OK(qv_index_add_strings(index.get(), 25, offsets.data(), words.bytes.data(), ids.data()));
    }
    EXPECT_EQ(Count(index.get()), 300);
    std::vector<bool> present(400, true);
    for (int64_t id : removed_ids) present[id] = false;
    const auto ref = EditReference(words, queries);

    void* buffer = nullptr;
    size_t size = 0;
    QV_ASSERT_OK(qv_index_save_buffer(index.get(), &buffer, &size));
    Buffer owned(buffer);
    qv_index_t* raw_loaded = nullptr;
    QV_ASSERT_OK(qv_index_load_buffer(ctx.get(), buffer, size, &raw_loaded));
    Index loaded(raw_loaded);
    for (qv_index_t* ix : {index.get(), loaded.get()}) {
      qv_range_result_t* raw = nullptr;
      QV_ASSERT_OK(qv_index_range_search_strings(ix, queries.size(), queries.offsets.data(), queries.bytes.data(),
                                                 2.0f, nullptr, &raw));
      RangeResult result(raw);
      EXPECT_TRUE(CheckMetricRange(ref, 2.0, 0.0, present, result.get()));
      const uint32_t k = 7;
      std::vector<float> distances(queries.size() * k);
      std::vector<int64_t> ids(queries.size() * k);
      QV_ASSERT_OK(qv_index_search_strings(ix, queries.size(), queries.offsets.data(), queries.bytes.data(), k,
                                           nullptr, distances.data(), ids.data()));
      EXPECT_TRUE(CheckMetricKnn(ref, k, 0.0, present, distances, ids));
    }
    // A damaged file is refused.
    std::vector<uint8_t> damaged(static_cast<const uint8_t*>(buffer), static_cast<const uint8_t*>(buffer) + size);
    damaged[size / 2] ^= 0x5A;
    qv_index_t* bad = nullptr;
    EXPECT_EQ(qv_index_load_buffer(ctx.get(), damaged.data(), damaged.size(), &bad), QV_ERR_CORRUPT_DATA);
    EXPECT_EQ(bad, nullptr);
  }
}

TEST(MetricSpace, FiltersApplyToRangeAndKnn) {
  Context ctx = MakeCpuContext();
  const StringSet words = RandomWords(250, 8);
  const StringSet queries = QueryWords(words, 19, 9);
  const auto ref = EditReference(words, queries);
  std::vector<uint8_t> bits((250 + 7) / 8, 0);
  std::vector<bool> allowed(250, false);
  for (int64_t id = 0; id < 250; id += 2) {
    bits[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
    allowed[id] = true;
  }
  qv_search_params_t params;
  QV_ASSERT_OK(qv_search_params_init(&params));
  params.filter = bits.data();
  params.filter_bits = 250;
  for (const char* descriptor : {"Flat", "LC5", "SSS0.4"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeStringIndex(ctx.get(), descriptor);
    QV_ASSERT_OK(qv_index_add_strings(index.get(), 250, words.offsets.data(), words.bytes.data(), nullptr));
    qv_range_result_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_range_search_strings(index.get(), queries.size(), queries.offsets.data(),
                                               queries.bytes.data(), 3.0f, &params, &raw));
    RangeResult result(raw);
    EXPECT_TRUE(CheckMetricRange(ref, 3.0, 0.0, allowed, result.get()));
    const uint32_t k = 4;
    std::vector<float> distances(queries.size() * k);
    std::vector<int64_t> ids(queries.size() * k);
    QV_ASSERT_OK(qv_index_search_strings(index.get(), queries.size(), queries.offsets.data(), queries.bytes.data(),
                                         k, &params, distances.data(), ids.data()));
    EXPECT_TRUE(CheckMetricKnn(ref, k, 0.0, allowed, distances, ids));
  }
}

// An L2 radius whose square root reaches past a row the squared radius excludes
// (CheckL2HitsPastTheSquaredRadiusAreDropped).
TEST(MetricSpace, L2HitsPastTheSquaredRadiusAreDropped) {
  Context ctx = MakeCpuContext();
  CheckL2HitsPastTheSquaredRadiusAreDropped(ctx.get());
}

TEST(MetricSpace, TooManyResultsIsItsOwnStatus) {
  Context ctx = MakeCpuContext();
  const StringSet words = RandomWords(100, 1);
  qv_search_params_t params;
  QV_ASSERT_OK(qv_search_params_init(&params));
  params.max_range_results = 10;
  for (const char* descriptor : {"Flat", "LC4", "SSS0.5"}) {
    Index index = MakeStringIndex(ctx.get(), descriptor);
    QV_ASSERT_OK(qv_index_add_strings(index.get(), 100, words.offsets.data(), words.bytes.data(), nullptr));
    qv_range_result_t* raw = nullptr;
    EXPECT_EQ(qv_index_range_search_strings(index.get(), 3, words.offsets.data(), words.bytes.data(), 1000.0f,
                                            &params, &raw),
              QV_ERR_TOO_MANY_RESULTS);
    EXPECT_EQ(raw, nullptr);
    EXPECT_NE(std::string(qv_last_error_message()).find("max_range_results"), std::string::npos);
  }
  // The cap holds for the vector kinds too.
  Index flat = MakeIndex(ctx.get(), 4, QV_METRIC_L2, "Flat");
  const std::vector<float> x = RandomVectors(50, 4, 2);
  QV_ASSERT_OK(qv_index_add(flat.get(), 50, x.data(), nullptr));
  qv_range_result_t* raw = nullptr;
  EXPECT_EQ(qv_index_range_search(flat.get(), 1, x.data(), 1e9f, &params, &raw), QV_ERR_TOO_MANY_RESULTS);
  params.max_range_results = -1;
  EXPECT_EQ(qv_index_range_search(flat.get(), 1, x.data(), 1e9f, &params, &raw), QV_ERR_INVALID_ARGUMENT);
}

TEST(MetricSpace, BadInputGetsSpecificStatusAndChangesNothing) {
  Context ctx = MakeCpuContext();
  qv_index_t* raw = nullptr;
  // Not a metric, or a kind that has no such metric.
  EXPECT_EQ(qv_index_create(ctx.get(), "LC8", 4, QV_METRIC_INNER_PRODUCT, &raw), QV_ERR_UNSUPPORTED);
  EXPECT_EQ(qv_index_create(ctx.get(), "SSS0.5", 4, QV_METRIC_COSINE, &raw), QV_ERR_UNSUPPORTED);
  EXPECT_EQ(qv_index_create(ctx.get(), "IVF4,Flat", 4, QV_METRIC_L1, &raw), QV_ERR_UNSUPPORTED);
  EXPECT_EQ(qv_index_create(ctx.get(), "Graph8", 0, QV_METRIC_EDIT, &raw), QV_ERR_UNSUPPORTED);
  EXPECT_EQ(qv_index_create(ctx.get(), "Flat", 5, QV_METRIC_EDIT, &raw), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_index_create(ctx.get(), "LC8", 0, QV_METRIC_L1, &raw), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_index_create(ctx.get(), "Flat", 4, 6, &raw), QV_ERR_INVALID_ARGUMENT);
  for (const char* bad : {"LC", "LC0", "LC65537", "LCx", "SSS", "SSS0", "SSS2.5", "SSS-1", "SSS0.5,P0", "SSS0.5,Q3",
                          "SSS0.5,P2000", "SSS.", "SSS1e-1"}) {
    EXPECT_EQ(qv_index_create(ctx.get(), bad, 0, QV_METRIC_EDIT, &raw), QV_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(raw, nullptr);
  }

  Index words = MakeStringIndex(ctx.get(), "LC4");
  const StringSet set = RandomWords(20, 2);
  QV_ASSERT_OK(qv_index_add_strings(words.get(), 20, set.offsets.data(), set.bytes.data(), nullptr));
  // Offsets that decrease, a NULL offsets array, a string too long: nothing is added.
  const std::vector<int64_t> decreasing{0, 3, 2};
  EXPECT_EQ(qv_index_add_strings(words.get(), 2, decreasing.data(), set.bytes.data(), nullptr), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_last_error_message()).find("string 1"), std::string::npos);
  EXPECT_EQ(qv_index_add_strings(words.get(), 2, nullptr, set.bytes.data(), nullptr), QV_ERR_INVALID_ARGUMENT);
  const std::vector<int64_t> huge{0, (int64_t{1} << 20) + 1};
  EXPECT_EQ(qv_index_add_strings(words.get(), 1, huge.data(), set.bytes.data(), nullptr), QV_ERR_INVALID_ARGUMENT);
  const int64_t duplicate_id = 3;
  EXPECT_EQ(qv_index_add_strings(words.get(), 1, set.offsets.data(), set.bytes.data(), &duplicate_id),
            QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Count(words.get()), 20);
  // Vectors on a string index, strings on a vector index.
  const std::vector<float> x = RandomVectors(2, 4, 1);
  EXPECT_EQ(qv_index_add(words.get(), 2, x.data(), nullptr), QV_ERR_UNSUPPORTED);
  Index vectors = MakeIndex(ctx.get(), 4, QV_METRIC_L1, "LC4");
  EXPECT_EQ(qv_index_add_strings(vectors.get(), 2, set.offsets.data(), set.bytes.data(), nullptr), QV_ERR_UNSUPPORTED);
  // Negative and NaN radii.
  qv_range_result_t* result = nullptr;
  EXPECT_EQ(qv_index_range_search_strings(words.get(), 1, set.offsets.data(), set.bytes.data(), -1.0f, nullptr, &result),
            QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_index_range_search_strings(words.get(), 1, set.offsets.data(), set.bytes.data(), NAN, nullptr, &result),
            QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(result, nullptr);
  // k out of range.
  float d[1];
  int64_t i[1];
  EXPECT_EQ(qv_index_search_strings(words.get(), 1, set.offsets.data(), set.bytes.data(), 0, nullptr, d, i),
            QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Count(words.get()), 20);
}

TEST(MetricSpace, EmptyIndexAndEmptyQueries) {
  Context ctx = MakeCpuContext();
  for (const char* descriptor : {"Flat", "LC4", "SSS0.5"}) {
    Index index = MakeStringIndex(ctx.get(), descriptor);
    const StringSet q = RandomWords(3, 5);
    float d[6];
    int64_t ids[6];
    QV_ASSERT_OK(qv_index_search_strings(index.get(), 3, q.offsets.data(), q.bytes.data(), 2, nullptr, d, ids));
    for (int j = 0; j < 6; ++j) EXPECT_EQ(ids[j], -1);
    qv_range_result_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_range_search_strings(index.get(), 0, nullptr, nullptr, 1.0f, nullptr, &raw));
    RangeResult result(raw);
    int64_t nq = -1;
    QV_ASSERT_OK(qv_range_result_get(result.get(), &nq, nullptr, nullptr, nullptr));
    EXPECT_EQ(nq, 0);
  }
}

}  // namespace
