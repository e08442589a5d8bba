// Save and load, to files and buffers: round trips, and every way a file can be wrong (truncated,
// flipped bytes, wrong magic, another format version, missing paths), atomic replacement.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

// The format header: a 4-byte magic, then the format version as a little-endian uint32.
constexpr size_t kVersionOffset = 4;

class CapiSerialize : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
    ASSERT_TRUE(dir_.ok());
  }

  // A small index (a few hundred bytes saved) with custom ids.
  Index SmallIndex(qv_metric_t metric = QV_METRIC_L2) {
    Index idx = MakeIndex(ctx_.get(), 4, metric);
    if (!idx) return idx;
    std::vector<float> x = RandomVectors(5, 4, 401);
    std::vector<int64_t> ids = {10, 20, int64_t(1) << 40, 0, 7};
    if (qv_index_add(idx.get(), 5, x.data(), ids.data()) != QV_OK) return Index();
    return idx;
  }

  std::vector<uint8_t> SaveToBytes(const qv_index_t* idx) {
    void* data = nullptr;
    size_t size = 0;
    qv_status_t s = qv_index_save_buffer(idx, &data, &size);
    EXPECT_EQ(s, QV_OK) << Describe(s);
    Buffer buf(data);
    if (s != QV_OK || data == nullptr) return {};
    const uint8_t* p = static_cast<const uint8_t*>(data);
    return std::vector<uint8_t>(p, p + size);
  }

  // Loads exactly `size` bytes from a heap block of that size, so that a read past the end is
  // caught by AddressSanitizer.
  qv_status_t LoadExact(const uint8_t* bytes, size_t size, Index* out) {
    void* block = std::malloc(size ? size : 1);
    if (size) std::memcpy(block, bytes, size);
    qv_index_t* raw = nullptr;
    qv_status_t s = qv_index_load_buffer(ctx_.get(), block, size, &raw);
    std::free(block);
    out->reset(raw);
    if (s != QV_OK && raw != nullptr) ADD_FAILURE() << "*out set on failure";
    return s;
  }

  Context ctx_;
  TempDir dir_;
};

::testing::AssertionResult SameInfo(const qv_index_t* a, const qv_index_t* b) {
  qv_index_info_t ia, ib;
  qv_index_info_init(&ia);
  qv_index_info_init(&ib);
  if (qv_index_info(a, &ia) != QV_OK || qv_index_info(b, &ib) != QV_OK)
    return ::testing::AssertionFailure() << "info: " << qv_last_error_message();
  if (ia.dim != ib.dim || ia.metric != ib.metric || ia.count != ib.count ||
      ia.is_trained != ib.is_trained || ia.device != ib.device || ia.device_id != ib.device_id ||
      std::strcmp(ia.descriptor, ib.descriptor) != 0)
    return ::testing::AssertionFailure()
           << "dim " << ia.dim << "/" << ib.dim << " metric " << ia.metric << "/" << ib.metric
           << " count " << ia.count << "/" << ib.count << " trained " << ia.is_trained << "/"
           << ib.is_trained << " descriptor " << ia.descriptor << "/" << ib.descriptor;
  return ::testing::AssertionSuccess();
}

TEST_F(CapiSerialize, FileAndBufferRoundTrips) {
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    const int64_t dim = 33, n = 777;
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    std::vector<float> x = RandomVectors(n, dim, 411);
    std::vector<int64_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = (int64_t(1) << 40) + 3 * i;
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), ids.data()));
    std::vector<float> q = RandomVectors(10, dim, 412);
    Results want;
    QV_ASSERT_OK(Search(idx.get(), q, dim, 50, nullptr, &want));

    const std::string path = dir_.File(std::string("round_trip_") + MetricName(metric) + ".qv");
    QV_ASSERT_OK(qv_index_save(idx.get(), path.c_str()));
    qv_index_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_load(ctx_.get(), path.c_str(), &raw));
    Index from_file(raw);
    Results got;
    QV_ASSERT_OK(Search(from_file.get(), q, dim, 50, nullptr, &got));
    EXPECT_TRUE(got == want) << MetricName(metric) << " (file)";
    EXPECT_TRUE(SameInfo(idx.get(), from_file.get()));

    std::vector<uint8_t> bytes = SaveToBytes(idx.get());
    ASSERT_FALSE(bytes.empty());
    Index from_buffer;
    QV_ASSERT_OK(LoadExact(bytes.data(), bytes.size(), &from_buffer));
    QV_ASSERT_OK(Search(from_buffer.get(), q, dim, 50, nullptr, &got));
    EXPECT_TRUE(got == want) << MetricName(metric) << " (buffer)";
    EXPECT_TRUE(SameInfo(idx.get(), from_buffer.get()));

    // One format: the file holds exactly the buffer's bytes.
    std::vector<uint8_t> file_bytes;
    ASSERT_TRUE(ReadFile(path, &file_bytes));
    EXPECT_TRUE(file_bytes == bytes) << "file and buffer differ";

    // Saving a loaded index gives the same bytes again.
    EXPECT_TRUE(SaveToBytes(from_buffer.get()) == bytes);

    // Range search agrees too.
    const float radius = metric == QV_METRIC_L2 ? 20.0f : 0.5f;
    qv_range_result_t *ra = nullptr, *rb = nullptr;
    QV_ASSERT_OK(qv_index_range_search(idx.get(), 10, q.data(), radius, nullptr, &ra));
    QV_ASSERT_OK(qv_index_range_search(from_file.get(), 10, q.data(), radius, nullptr, &rb));
    RangeResult a(ra), b(rb);
    const int64_t *la, *lb, *ia, *ib;
    QV_ASSERT_OK(qv_range_result_get(a.get(), nullptr, &la, &ia, nullptr));
    QV_ASSERT_OK(qv_range_result_get(b.get(), nullptr, &lb, &ib, nullptr));
    ASSERT_EQ(std::vector<int64_t>(la, la + 11), std::vector<int64_t>(lb, lb + 11));
    EXPECT_EQ(std::vector<int64_t>(ia, ia + la[10]), std::vector<int64_t>(ib, ib + lb[10]));
  }
}

TEST_F(CapiSerialize, LoadedIndexIsIndependentAndWritable) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  Index copy;
  QV_ASSERT_OK(LoadExact(bytes.data(), bytes.size(), &copy));
  std::vector<float> v = RandomVectors(2, 4, 421);
  QV_ASSERT_OK(qv_index_add(copy.get(), 2, v.data(), nullptr));  // numbered after 1<<40
  EXPECT_EQ(Count(copy.get()), 7);
  EXPECT_EQ(Count(idx.get()), 5);
  float d;
  int64_t id = -1;
  QV_ASSERT_OK(qv_index_search(copy.get(), 1, &v[4], 1, nullptr, &d, &id));
  EXPECT_EQ(id, (int64_t(1) << 40) + 2);
  int64_t gone = 20, removed = -1;
  QV_ASSERT_OK(qv_index_remove(copy.get(), 1, &gone, &removed));
  EXPECT_EQ(removed, 1);
  EXPECT_EQ(Count(idx.get()), 5);
}

TEST_F(CapiSerialize, EmptyIndexRoundTrips) {
  Index idx = MakeIndex(ctx_.get(), 12, QV_METRIC_COSINE);
  ASSERT_TRUE(idx);
  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  ASSERT_FALSE(bytes.empty());
  Index copy;
  QV_ASSERT_OK(LoadExact(bytes.data(), bytes.size(), &copy));
  EXPECT_TRUE(SameInfo(idx.get(), copy.get()));
  EXPECT_EQ(Count(copy.get()), 0);
}

TEST_F(CapiSerialize, EveryTruncationIsCorruptData) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  ASSERT_GT(bytes.size(), 8u);
  for (size_t len = 0; len < bytes.size(); ++len) {
    Index out;
    qv_status_t s = LoadExact(bytes.data(), len, &out);
    EXPECT_EQ(s, QV_ERR_CORRUPT_DATA)
        << "prefix of " << len << " of " << bytes.size() << " bytes: " << Describe(s);
    if (s == QV_ERR_CORRUPT_DATA) {
      EXPECT_STRNE(qv_last_error_message(), "");
    }
  }
  Index whole;
  QV_EXPECT_OK(LoadExact(bytes.data(), bytes.size(), &whole));
}

TEST_F(CapiSerialize, TruncatedFilesAreCorruptData) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  const std::string path = dir_.File("truncated.qv");
  for (size_t len :
       {size_t(0), size_t(3), size_t(4), size_t(8), bytes.size() / 2, bytes.size() - 1}) {
    ASSERT_TRUE(WriteFile(path, bytes.data(), len));
    qv_index_t* raw = nullptr;
    qv_status_t s = qv_index_load(ctx_.get(), path.c_str(), &raw);
    Index out(raw);
    EXPECT_EQ(s, QV_ERR_CORRUPT_DATA) << "file of " << len << " bytes: " << Describe(s);
    EXPECT_EQ(raw, nullptr);
  }
}

TEST_F(CapiSerialize, EveryFlippedByteIsDetected) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  const std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  for (uint8_t mask : {uint8_t(0xFF), uint8_t(0x01), uint8_t(0x80)}) {
    for (size_t pos = 0; pos < bytes.size(); ++pos) {
      std::vector<uint8_t> bad = bytes;
      bad[pos] ^= mask;
      Index out;
      qv_status_t s = LoadExact(bad.data(), bad.size(), &out);
      // A changed version field reads as another format version; anything else is damage.
      qv_status_t want = (pos >= kVersionOffset && pos < kVersionOffset + 4)
                             ? QV_ERR_VERSION_MISMATCH
                             : QV_ERR_CORRUPT_DATA;
      EXPECT_EQ(s, want) << "byte " << pos << " of " << bytes.size() << " ^ 0x" << std::hex
                         << int(mask) << std::dec << ": " << Describe(s);
    }
  }
}

TEST_F(CapiSerialize, WrongMagicIsCorruptData) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  for (size_t pos = 0; pos < 4; ++pos) {
    std::vector<uint8_t> bad = bytes;
    bad[pos] = uint8_t(bad[pos] + 1);
    Index out;
    qv_status_t s = LoadExact(bad.data(), bad.size(), &out);
    EXPECT_EQ(s, QV_ERR_CORRUPT_DATA) << "magic byte " << pos << ": " << Describe(s);
  }
  // Things that are not quiver files at all.
  std::vector<uint8_t> zeros(bytes.size(), 0);
  std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'};
  std::vector<uint8_t> noise(bytes.size());
  std::mt19937 rng(431);
  for (uint8_t& b : noise) b = uint8_t(rng());
  for (const std::vector<uint8_t>* junk : {&zeros, &text, &noise}) {
    Index out;
    qv_status_t s = LoadExact(junk->data(), junk->size(), &out);
    EXPECT_EQ(s, QV_ERR_CORRUPT_DATA) << Describe(s);
  }
  const std::string path = dir_.File("text.qv");
  ASSERT_TRUE(WriteFile(path, text.data(), text.size()));
  qv_index_t* raw = nullptr;
  EXPECT_EQ(qv_index_load(ctx_.get(), path.c_str(), &raw), QV_ERR_CORRUPT_DATA);
  EXPECT_EQ(raw, nullptr);
}

TEST_F(CapiSerialize, AnotherFormatVersionIsVersionMismatch) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  ASSERT_GE(bytes.size(), kVersionOffset + 4);
  uint32_t version = uint32_t(bytes[4]) | uint32_t(bytes[5]) << 8 | uint32_t(bytes[6]) << 16 |
                     uint32_t(bytes[7]) << 24;
  EXPECT_GE(version, 1u) << "format version field";
  EXPECT_LT(version, 1000u) << "the format version is not at offset 4 (little-endian)?";
  // Only the version changes; nothing else (checksum included) is recomputed: the version must be
  // judged before anything that depends on it.
  for (uint32_t other : {version + 1, version + 100, uint32_t(0), uint32_t(0xFFFFFFFFu)}) {
    std::vector<uint8_t> bad = bytes;
    for (int b = 0; b < 4; ++b) bad[kVersionOffset + b] = uint8_t(other >> (8 * b));
    Index out;
    qv_status_t s = LoadExact(bad.data(), bad.size(), &out);
    EXPECT_EQ(s, QV_ERR_VERSION_MISMATCH) << "version " << other << ": " << Describe(s);
    if (s == QV_ERR_VERSION_MISMATCH) {
      EXPECT_STRNE(qv_last_error_message(), "");
    }

    const std::string path = dir_.File("future.qv");
    ASSERT_TRUE(WriteFile(path, bad.data(), bad.size()));
    qv_index_t* raw = nullptr;
    s = qv_index_load(ctx_.get(), path.c_str(), &raw);
    Index out2(raw);
    EXPECT_EQ(s, QV_ERR_VERSION_MISMATCH) << "file, version " << other << ": " << Describe(s);
  }
}

TEST_F(CapiSerialize, MissingFileIsIo) {
  qv_index_t* raw = nullptr;
  const std::string path = dir_.File("does_not_exist.qv");
  EXPECT_EQ(qv_index_load(ctx_.get(), path.c_str(), &raw), QV_ERR_IO);
  EXPECT_EQ(raw, nullptr);
  EXPECT_STRNE(qv_last_error_message(), "");
  EXPECT_EQ(qv_index_load(ctx_.get(), dir_.File("no_dir/x.qv").c_str(), &raw), QV_ERR_IO);
  // A directory is not a readable index file.
  EXPECT_EQ(qv_index_load(ctx_.get(), dir_.path().c_str(), &raw), QV_ERR_IO);
  EXPECT_EQ(raw, nullptr);
}

TEST_F(CapiSerialize, SaveIntoMissingDirectoryIsIoAndLeavesNothing) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  const std::string path = dir_.File("missing_dir/index.qv");
  EXPECT_EQ(qv_index_save(idx.get(), path.c_str()), QV_ERR_IO);
  EXPECT_STRNE(qv_last_error_message(), "");
  EXPECT_TRUE(dir_.List().empty()) << "left behind: " << ::testing::PrintToString(dir_.List());
  // Saving onto a path that is a directory fails too, and leaves the directory as it was.
  ASSERT_EQ(mkdir(dir_.File("a_dir").c_str(), 0700), 0);
  EXPECT_EQ(qv_index_save(idx.get(), dir_.File("a_dir").c_str()), QV_ERR_IO);
  EXPECT_EQ(dir_.List(), std::vector<std::string>{"a_dir"});
  // The index is still fine.
  EXPECT_EQ(Count(idx.get()), 5);
}

TEST_F(CapiSerialize, SaveReplacesExistingFileAtomically) {
  const std::string path = dir_.File("index.qv");
  const std::string junk = "not an index, and longer than nothing";
  ASSERT_TRUE(WriteFile(path, junk.data(), junk.size()));

  Index a = SmallIndex(QV_METRIC_L2);
  ASSERT_TRUE(a);
  QV_ASSERT_OK(qv_index_save(a.get(), path.c_str()));
  EXPECT_EQ(dir_.List(), std::vector<std::string>{"index.qv"});

  Index b = MakeIndex(ctx_.get(), 7, QV_METRIC_INNER_PRODUCT);
  ASSERT_TRUE(b);
  std::vector<float> x = RandomVectors(9, 7, 441);
  QV_ASSERT_OK(qv_index_add(b.get(), 9, x.data(), nullptr));
  QV_ASSERT_OK(qv_index_save(b.get(), path.c_str()));
  // No temporary file is left beside it.
  EXPECT_EQ(dir_.List(), std::vector<std::string>{"index.qv"});

  qv_index_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_load(ctx_.get(), path.c_str(), &raw));
  Index loaded(raw);
  EXPECT_TRUE(SameInfo(b.get(), loaded.get()));
  std::vector<uint8_t> file_bytes;
  ASSERT_TRUE(ReadFile(path, &file_bytes));
  EXPECT_TRUE(file_bytes == SaveToBytes(b.get()));
}

TEST_F(CapiSerialize, BadArguments) {
  Index idx = SmallIndex();
  ASSERT_TRUE(idx);
  const std::string path = dir_.File("x.qv");
  EXPECT_TRUE(FailsNaming(qv_index_save(nullptr, path.c_str()), QV_ERR_INVALID_ARGUMENT, "index"));
  EXPECT_TRUE(FailsNaming(qv_index_save(idx.get(), nullptr), QV_ERR_INVALID_ARGUMENT, "path"));
  EXPECT_TRUE(dir_.List().empty());

  void* data = nullptr;
  size_t size = 0;
  EXPECT_TRUE(
      FailsNaming(qv_index_save_buffer(nullptr, &data, &size), QV_ERR_INVALID_ARGUMENT, "index"));
  EXPECT_TRUE(FailsNaming(qv_index_save_buffer(idx.get(), nullptr, &size), QV_ERR_INVALID_ARGUMENT,
                          "data"));
  EXPECT_TRUE(FailsNaming(qv_index_save_buffer(idx.get(), &data, nullptr), QV_ERR_INVALID_ARGUMENT,
                          "size"));
  EXPECT_EQ(data, nullptr);

  QV_ASSERT_OK(qv_index_save(idx.get(), path.c_str()));
  qv_index_t* raw = nullptr;
  EXPECT_TRUE(
      FailsNaming(qv_index_load(nullptr, path.c_str(), &raw), QV_ERR_INVALID_ARGUMENT, "context"));
  EXPECT_TRUE(
      FailsNaming(qv_index_load(ctx_.get(), nullptr, &raw), QV_ERR_INVALID_ARGUMENT, "path"));
  EXPECT_TRUE(FailsNaming(qv_index_load(ctx_.get(), path.c_str(), nullptr), QV_ERR_INVALID_ARGUMENT,
                          "out"));
  EXPECT_EQ(raw, nullptr);

  std::vector<uint8_t> bytes = SaveToBytes(idx.get());
  EXPECT_TRUE(FailsNaming(qv_index_load_buffer(nullptr, bytes.data(), bytes.size(), &raw),
                          QV_ERR_INVALID_ARGUMENT, "context"));
  EXPECT_TRUE(FailsNaming(qv_index_load_buffer(ctx_.get(), nullptr, bytes.size(), &raw),
                          QV_ERR_INVALID_ARGUMENT, "data"));
  EXPECT_TRUE(FailsNaming(qv_index_load_buffer(ctx_.get(), bytes.data(), bytes.size(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "out"));
  EXPECT_EQ(raw, nullptr);
  qv_buffer_free(nullptr);
}

}  // namespace
