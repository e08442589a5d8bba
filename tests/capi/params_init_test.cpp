// The qv_*_init entry points: the sized functions (what the header's qv_*_init macros call) write
// exactly the struct size their caller declares; the unsized functions, kept for programs built
// before the sized ones existed, write the struct as it was then and never more, however the
// struct grows.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

constexpr unsigned char kCanary = 0x5A;

// A struct followed by room a larger (newer) header's struct would have, all canary bytes.
template <typename T>
struct Padded {
  T value;
  unsigned char tail[64];
  Padded() { std::memset(this, kCanary, sizeof *this); }
  const unsigned char* bytes() const { return reinterpret_cast<const unsigned char*>(this); }
  // The first byte from `from` on that is not a canary, or sizeof *this.
  size_t first_written(size_t from) const {
    for (size_t i = from; i < sizeof *this; ++i)
      if (bytes()[i] != kCanary) return i;
    return sizeof *this;
  }
  size_t last_written() const {
    for (size_t i = sizeof *this; i > 0; --i)
      if (bytes()[i - 1] != kCanary) return i;
    return 0;
  }
};

// Each unsized function's frozen size: the struct of the headers before the sized functions (the
// ABI baseline of quiver 0.x). These numbers are a promise to already-built programs: never change
// them.
TEST(CapiParamsInit, UnsizedInitWritesOnlyTheStructItWasBuiltFor) {
  {
    Padded<qv_search_params_t> p;
    QV_ASSERT_OK((qv_search_params_init)(&p.value));
    EXPECT_EQ(p.value.struct_size, 48u);
    EXPECT_EQ(p.value.nprobe, QV_NPROBE_DEFAULT);
    EXPECT_LE(p.last_written(), 48u);
  }
  {
    Padded<qv_context_options_t> o;
    QV_ASSERT_OK((qv_context_options_init)(&o.value));
    EXPECT_EQ(o.value.struct_size, 16u);
    EXPECT_EQ(o.value.device, QV_DEVICE_AUTO);
    EXPECT_LE(o.last_written(), 16u);
  }
  {
    Padded<qv_kmeans_params_t> p;
    QV_ASSERT_OK((qv_kmeans_params_init)(&p.value));
    EXPECT_EQ(p.value.struct_size, 24u);
    EXPECT_EQ(p.value.iterations, 20u);
    EXPECT_LE(p.last_written(), 24u);
  }
  {
    Padded<qv_knn_graph_params_t> p;
    QV_ASSERT_OK((qv_knn_graph_params_init)(&p.value));
    EXPECT_EQ(p.value.struct_size, 48u);
    EXPECT_EQ(p.value.target_recall, 0.95);
    EXPECT_LE(p.last_written(), 48u);
  }
  {
    Padded<qv_index_info_t> info;
    QV_ASSERT_OK((qv_index_info_init)(&info.value));
    EXPECT_EQ(info.value.struct_size, 184u);
    EXPECT_LE(info.last_written(), 184u);
  }
}

TEST(CapiParamsInit, UnsizedInitNullIsInvalidArgument) {
  EXPECT_TRUE(FailsNaming((qv_search_params_init)(nullptr), QV_ERR_INVALID_ARGUMENT, "params"));
  EXPECT_TRUE(FailsNaming((qv_context_options_init)(nullptr), QV_ERR_INVALID_ARGUMENT, "options"));
  EXPECT_TRUE(FailsNaming((qv_kmeans_params_init)(nullptr), QV_ERR_INVALID_ARGUMENT, "params"));
  EXPECT_TRUE(FailsNaming((qv_knn_graph_params_init)(nullptr), QV_ERR_INVALID_ARGUMENT, "params"));
  EXPECT_TRUE(FailsNaming((qv_index_info_init)(nullptr), QV_ERR_INVALID_ARGUMENT, "info"));
}

TEST(CapiParamsInit, TheMacroPassesTheHeadersSize) {
  Padded<qv_search_params_t> p;
  QV_ASSERT_OK(qv_search_params_init(&p.value));
  EXPECT_EQ(p.value.struct_size, sizeof(qv_search_params_t));
  EXPECT_EQ(p.last_written(), sizeof(qv_search_params_t));
  Padded<qv_context_options_t> o;
  QV_ASSERT_OK(qv_context_options_init(&o.value));
  EXPECT_EQ(o.value.struct_size, sizeof(qv_context_options_t));
  EXPECT_EQ(o.first_written(sizeof(qv_context_options_t)), sizeof o);
}

TEST(CapiParamsInit, SizedInitWritesEachOlderVersionUpToItsSize) {
  const size_t versions[] = {offsetof(qv_search_params_t, nprobe), offsetof(qv_search_params_t, search_width),
                             offsetof(qv_search_params_t, compute_mode), offsetof(qv_search_params_t, graph_visited),
                             sizeof(qv_search_params_t)};
  for (size_t size : versions) {
    Padded<qv_search_params_t> p;
    QV_ASSERT_OK(qv_search_params_init_sized(&p.value, size));
    EXPECT_EQ(p.value.struct_size, size);
    EXPECT_EQ(p.first_written(size), sizeof p) << "size " << size;
  }
}

// A small flat index to search with initialised params.
class CapiParamsInitSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext();
    idx_ = MakeIndex(ctx_.get(), dim_, QV_METRIC_L2);
    x_ = RandomVectors(n_, dim_, 3);
    QV_ASSERT_OK(qv_index_add(idx_.get(), n_, x_.data(), nullptr));
  }
  const int64_t n_ = 50, dim_ = 7;
  Context ctx_;
  Index idx_;
  std::vector<float> x_;
};

TEST_F(CapiParamsInitSearch, SizedInitZeroesANewerHeadersFields) {
  // A program built against a newer header whose struct is 16 bytes longer: those bytes are zeroed
  // (their default), and the search accepts the struct until one of them is set.
  Padded<qv_search_params_t> p;
  const size_t newer = sizeof(qv_search_params_t) + 16;
  QV_ASSERT_OK(qv_search_params_init_sized(&p.value, newer));
  EXPECT_EQ(p.value.struct_size, newer);
  for (size_t i = sizeof(qv_search_params_t); i < newer; ++i) ASSERT_EQ(p.bytes()[i], 0) << "byte " << i;
  EXPECT_EQ(p.first_written(newer), sizeof p);
  std::vector<float> d(5);
  std::vector<int64_t> ids(5);
  QV_ASSERT_OK(qv_index_search(idx_.get(), 1, x_.data(), 5, &p.value, d.data(), ids.data()));
  EXPECT_EQ(ids[0], 0);
  p.tail[3] = 1;
  EXPECT_TRUE(FailsNaming(qv_index_search(idx_.get(), 1, x_.data(), 5, &p.value, d.data(), ids.data()),
                          QV_ERR_UNSUPPORTED, "struct_size"));
}

TEST(CapiParamsInit, SizedInitRefusesSizesOfNoVersion) {
  qv_search_params_t p;
  for (size_t size : {size_t{0}, size_t{4}, offsetof(qv_search_params_t, filter_bits) + 4, size_t{1} << 20}) {
    std::memset(&p, kCanary, sizeof p);
    EXPECT_TRUE(FailsNamingAny(qv_search_params_init_sized(&p, size), QV_ERR_INVALID_ARGUMENT, {"size", "struct_size"}))
        << "size " << size;
    EXPECT_EQ(p.struct_size, 0x5A5A5A5Au) << "a refused init wrote the struct";
  }
  qv_context_options_t o;
  EXPECT_TRUE(FailsNamingAny(qv_context_options_init_sized(&o, 6), QV_ERR_INVALID_ARGUMENT, {"size", "struct_size"}));
  qv_kmeans_params_t k;
  EXPECT_TRUE(FailsNamingAny(qv_kmeans_params_init_sized(&k, 2), QV_ERR_INVALID_ARGUMENT, {"size", "struct_size"}));
  qv_knn_graph_params_t g;
  EXPECT_TRUE(FailsNamingAny(qv_knn_graph_params_init_sized(&g, 5), QV_ERR_INVALID_ARGUMENT, {"size", "struct_size"}));
  qv_index_info_t info;
  EXPECT_TRUE(FailsNamingAny(qv_index_info_init_sized(&info, 3), QV_ERR_INVALID_ARGUMENT, {"size", "struct_size"}));
  EXPECT_TRUE(FailsNaming(qv_search_params_init_sized(nullptr, sizeof p), QV_ERR_INVALID_ARGUMENT, "params"));
}

TEST_F(CapiParamsInitSearch, TheUnsizedSearchParamsSearchWithTheirDefaults) {
  // An older program's 48-byte params: the graph fields it never had keep their defaults.
  Padded<qv_search_params_t> p;
  QV_ASSERT_OK((qv_search_params_init)(&p.value));
  std::vector<float> d(4), d_default(4);
  std::vector<int64_t> ids(4), ids_default(4);
  QV_ASSERT_OK(qv_index_search(idx_.get(), 1, x_.data() + dim_, 4, &p.value, d.data(), ids.data()));
  QV_ASSERT_OK(qv_index_search(idx_.get(), 1, x_.data() + dim_, 4, nullptr, d_default.data(), ids_default.data()));
  EXPECT_EQ(ids, ids_default);
  EXPECT_EQ(d, d_default);
}

}  // namespace
