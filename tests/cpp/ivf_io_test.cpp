// Saving and loading inverted-file indexes: identical results after a round trip, and damaged data
// (truncated, flipped, or well-checksummed but inconsistent) refused with corrupt_data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpp/core/error.h"
#include "cpp/io/checksum.h"
#include "cpp/io/index_io.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::build;
using testing::clustered_vectors;
using testing::probing;
using testing::search;
using testing::status_of;

TEST(IvfIo, RoundTripGivesIdenticalResults) {
  Context context(testing::cpu_options());
  const int64_t n = 2000, dim = 24, nq = 50;
  const auto x = clustered_vectors(n, dim, 12, 1);
  const auto q = clustered_vectors(nq, dim, 12, 2);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = 3 * i + 1;
  for (const char* descriptor : {"IVF8,Flat", "IVF8,PQ6", "OPQ4,IVF8,PQ8,Refine"}) {
    for (Metric metric : {Metric::l2, Metric::cosine}) {
      auto index = build(context, descriptor, dim, metric, x, ids.data());
      const int64_t removed[3] = {1, 4, 3002};  // 3002 is not an id
      index->remove(3, removed);
      const std::vector<uint8_t> bytes = save_to_bytes(*index);
      auto loaded = load_from_bytes(context, bytes.data(), bytes.size());
      EXPECT_EQ(loaded->kind(), index->kind());
      EXPECT_EQ(loaded->count(), n - 2);
      EXPECT_EQ(loaded->descriptor(), descriptor);
      EXPECT_EQ(loaded->metric(), metric);
      const auto a = search(*index, q, 10, probing(3));
      const auto b = search(*loaded, q, 10, probing(3));
      EXPECT_EQ(a.ids, b.ids) << descriptor;
      EXPECT_EQ(a.distances, b.distances) << descriptor;
      const RangeResult ra = index->range_search(nq, q.data(), a.distances[5], probing(2));
      const RangeResult rb = loaded->range_search(nq, q.data(), a.distances[5], probing(2));
      EXPECT_EQ(ra.ids, rb.ids);
      EXPECT_EQ(save_to_bytes(*loaded), bytes) << "saving again gives the same bytes";
      // The loaded index keeps working: adds continue the ids, removes find their lists.
      loaded->add(1, x.data(), nullptr);
      const int64_t next = 3 * (n - 1) + 2;
      EXPECT_EQ(loaded->remove(1, &next), 1);
      EXPECT_EQ(loaded->remove(1, &ids[10]), 1);
    }
  }
}

TEST(IvfIo, UntrainedAndEmptyIndexesRoundTrip) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(400, 8, 4, 1);
  auto untrained = create_index(context, "IVF4,PQ2", 8, Metric::l2);
  auto bytes = save_to_bytes(*untrained);
  auto loaded = load_from_bytes(context, bytes.data(), bytes.size());
  EXPECT_FALSE(loaded->is_trained());
  loaded->train(400, x.data());
  loaded->add(400, x.data(), nullptr);
  untrained->train(400, x.data());
  bytes = save_to_bytes(*untrained);  // trained, empty
  loaded = load_from_bytes(context, bytes.data(), bytes.size());
  EXPECT_TRUE(loaded->is_trained());
  EXPECT_EQ(loaded->count(), 0);
  const auto r = search(*loaded, std::vector<float>(x.begin(), x.begin() + 8), 5, probing(4));
  for (int64_t id : r.ids) EXPECT_EQ(id, -1);
}

TEST(IvfIo, TruncatedOrFlippedDataIsCorrupt) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(300, 6, 3, 1);
  for (const char* descriptor : {"IVF3,Flat", "IVF3,PQ3,Refine"}) {
    auto index = build(context, descriptor, 6, Metric::l2, x);
    const std::vector<uint8_t> bytes = save_to_bytes(*index);
    for (size_t size = 0; size < bytes.size(); ++size) {
      const Status s = status_of([&] { load_from_bytes(context, bytes.data(), size); });
      EXPECT_EQ(s, Status::corrupt_data) << descriptor << " cut at " << size;
    }
    for (size_t at = 12; at < bytes.size(); at += 7) {  // past the magic and version
      std::vector<uint8_t> damaged = bytes;
      damaged[at] ^= 0x10;
      EXPECT_EQ(status_of([&] { load_from_bytes(context, damaged.data(), damaged.size()); }), Status::corrupt_data)
          << descriptor << " flipped at " << at;
    }
  }
}

// Damage the payload but fix the checksum: the payload's own checks must catch it.
class IvfIoCrafted : public ::testing::Test {
 protected:
  void SetUp() override {
    x_ = clustered_vectors(300, kDim, 3, 1);
    index_ = build(context_, "IVF3,Flat", kDim, Metric::l2, x_);
    bytes_ = save_to_bytes(*index_);
    // Common header: magic, version, kind, metric (4 x u32), dim, count (2 x i64), descriptor.
    payload_ = 4 * 4 + 2 * 8 + 4 + std::strlen("IVF3,Flat");
    // Payload: version, trained (u32), nlist, pq_m (i64), rotation, raw (u32), centroids, lists.
    first_list_ = payload_ + 4 + 4 + 8 + 8 + 4 + 4 + 3 * kDim * 4;
  }
  Status load(std::vector<uint8_t> bytes) const {
    const uint64_t sum = checksum64(bytes.data(), bytes.size() - 8);
    std::memcpy(&bytes[bytes.size() - 8], &sum, 8);
    return status_of([&] { load_from_bytes(const_cast<Context&>(context_), bytes.data(), bytes.size()); });
  }
  template <typename T>
  std::vector<uint8_t> with(size_t at, T value) const {
    std::vector<uint8_t> b = bytes_;
    std::memcpy(&b[at], &value, sizeof value);
    return b;
  }
  static constexpr int64_t kDim = 5;
  Context context_{testing::cpu_options()};
  std::vector<float> x_;
  std::unique_ptr<Index> index_;
  std::vector<uint8_t> bytes_;
  size_t payload_ = 0, first_list_ = 0;
};

TEST_F(IvfIoCrafted, EachInconsistencyIsCaught) {
  ASSERT_EQ(load(bytes_), Status::ok);
  EXPECT_EQ(load(with<uint32_t>(payload_, 7)), Status::corrupt_data);             // payload version
  EXPECT_EQ(load(with<uint32_t>(payload_ + 4, 2)), Status::corrupt_data);         // trained flag
  EXPECT_EQ(load(with<uint32_t>(payload_ + 4, 0)), Status::corrupt_data);         // untrained with vectors
  EXPECT_EQ(load(with<int64_t>(payload_ + 8, 4)), Status::corrupt_data);          // nlist != descriptor
  EXPECT_EQ(load(with<int64_t>(payload_ + 16, 5)), Status::corrupt_data);         // PQ M on Flat
  EXPECT_EQ(load(with<uint32_t>(payload_ + 28, 1)), Status::corrupt_data);        // raw vectors on Flat
  EXPECT_EQ(load(with<float>(payload_ + 32, std::numeric_limits<float>::quiet_NaN())), Status::corrupt_data);
  EXPECT_EQ(load(with<int64_t>(first_list_, int64_t{1} << 60)), Status::corrupt_data);  // huge list
  EXPECT_EQ(load(with<int64_t>(first_list_, -1)), Status::corrupt_data);
  EXPECT_EQ(load(with<int64_t>(4 * 4 + 8, 299)), Status::corrupt_data);           // header count
  EXPECT_EQ(load(with<int64_t>(4 * 4 + 8, 301)), Status::corrupt_data);
  int64_t first_size = 0, first_id = 0;
  std::memcpy(&first_size, &bytes_[first_list_], 8);
  ASSERT_GE(first_size, 2);
  std::memcpy(&first_id, &bytes_[first_list_ + 8], 8);
  EXPECT_EQ(load(with<int64_t>(first_list_ + 16, first_id)), Status::corrupt_data);  // duplicate id
  EXPECT_EQ(load(with<int64_t>(first_list_ + 16, -5)), Status::corrupt_data);        // negative id
  const size_t first_vector = first_list_ + 8 + 8 * first_size;
  EXPECT_EQ(load(with<float>(first_vector, std::numeric_limits<float>::infinity())), Status::corrupt_data);
}

}  // namespace
}  // namespace quiver
