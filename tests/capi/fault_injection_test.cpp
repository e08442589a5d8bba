// Fault injection: every host allocation a call makes fails in turn (the replaced global operator
// new of this test binary, which libquiver.so's C++ code also uses), and the call must return
// QV_ERR_OUT_OF_HOST_MEMORY (or succeed, where the allocation was optional) without crashing,
// leaking (the sanitizer build checks) or changing the index: the same count and the same answers.
// Saves also fail on a disk that fills up part way (the file size limit), and must leave the file
// they replace whole.
#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <new>

#include "metric_space_checks.h"

namespace {

// The allocation number (from arming) that fails; 0: none.
std::atomic<long> fail_at{0};
std::atomic<long> allocations{0};

void* allocate(std::size_t size) {
  const long target = fail_at.load(std::memory_order_relaxed);
  if (target > 0 && allocations.fetch_add(1, std::memory_order_relaxed) + 1 == target) throw std::bad_alloc();
  void* p = std::malloc(size ? size : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

// Every form that pairs with the plain deletes below is replaced, so no block crosses allocators
// (std::get_temporary_buffer, inside std::stable_sort, uses the nothrow form).
void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace qvtest;

// Arms the n-th allocation to fail, runs call, disarms; returns the call's status.
template <typename Call>
qv_status_t with_failure_at(long n, Call call) {
  allocations = 0;
  fail_at = n;
  const qv_status_t status = call();
  fail_at = 0;
  return status;
}

// For each allocation of an add (then a remove) in turn: the failed call reports out of host
// memory and leaves the index as it was; the first n past the call's allocations succeeds.
void CheckAddAndRemove(const char* descriptor, qv_metric_t metric, int64_t dim, bool train) {
  SCOPED_TRACE(descriptor);
  Context ctx = MakeCpuContext(1);
  const std::vector<float> base = ClusteredVectors(300, dim, 6, 1, 2);
  const std::vector<float> more = ClusteredVectors(40, dim, 6, 1, 3);
  const std::vector<float> queries = ClusteredVectors(5, dim, 6, 1, 4);
  Index index = MakeIndex(ctx.get(), dim, metric, descriptor);
  ASSERT_TRUE(index);
  if (train) QV_ASSERT_OK(qv_index_train(index.get(), 300, base.data()));
  QV_ASSERT_OK(qv_index_add(index.get(), 300, base.data(), nullptr));
  const std::vector<int64_t> before = SearchSnapshot(index.get(), queries, dim);
  bool succeeded = false;
  for (long n = 1; n < 100000 && !succeeded; ++n) {
    const qv_status_t s = with_failure_at(n, [&] { return qv_index_add(index.get(), 40, more.data(), nullptr); });
    if (s == QV_OK) {
      succeeded = true;
      break;
    }
    ASSERT_EQ(s, QV_ERR_OUT_OF_HOST_MEMORY) << "allocation " << n << ": " << qv_last_error_message();
    ASSERT_EQ(SearchSnapshot(index.get(), queries, dim), before) << "allocation " << n << " changed the index";
  }
  ASSERT_TRUE(succeeded);
  const std::vector<int64_t> after_add = SearchSnapshot(index.get(), queries, dim);
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < 340; id += 3) ids.push_back(id);
  succeeded = false;
  for (long n = 1; n < 100000 && !succeeded; ++n) {
    const qv_status_t s = with_failure_at(n, [&] {
      return qv_index_remove(index.get(), static_cast<int64_t>(ids.size()), ids.data(), nullptr);
    });
    if (s == QV_OK) {
      succeeded = true;
      break;
    }
    ASSERT_EQ(s, QV_ERR_OUT_OF_HOST_MEMORY) << "allocation " << n << ": " << qv_last_error_message();
    ASSERT_EQ(SearchSnapshot(index.get(), queries, dim), after_add) << "allocation " << n << " changed the index";
  }
  ASSERT_TRUE(succeeded);
  EXPECT_EQ(Count(index.get()), 340 - static_cast<int64_t>(ids.size()));
}

TEST(FaultInjection, FlatAddAndRemove) { CheckAddAndRemove("Flat", QV_METRIC_L2, 8, false); }
TEST(FaultInjection, IvfFlatAddAndRemove) { CheckAddAndRemove("IVF8,Flat", QV_METRIC_L2, 8, true); }
TEST(FaultInjection, IvfPqAddAndRemove) { CheckAddAndRemove("IVF8,PQ4", QV_METRIC_INNER_PRODUCT, 8, true); }
TEST(FaultInjection, GraphAddAndRemove) { CheckAddAndRemove("Graph8", QV_METRIC_L2, 8, false); }
// Wide vectors: the CPU walk's projection is made again or extended with each add.
TEST(FaultInjection, WideGraphAddAndRemove) { CheckAddAndRemove("Graph8", QV_METRIC_L2, 256, false); }
TEST(FaultInjection, ListOfClustersAddAndRemove) { CheckAddAndRemove("LC8", QV_METRIC_L1, 8, false); }
TEST(FaultInjection, SssAddAndRemove) { CheckAddAndRemove("SSS0.5", QV_METRIC_LINF, 8, false); }

// Trains index on all of base where its kind (IVF) needs it, then adds base's first `rows` vectors.
void Fill(qv_index_t* index, const char* descriptor, const std::vector<float>& base, int64_t dim, int64_t rows) {
  const int64_t n = static_cast<int64_t>(base.size()) / dim;
  if (std::string(descriptor).rfind("IVF", 0) == 0) QV_ASSERT_OK(qv_index_train(index, n, base.data()));
  QV_ASSERT_OK(qv_index_add(index, rows, base.data(), nullptr));
}

// The bytes qv_index_save writes for index.
std::vector<uint8_t> SavedBytes(const qv_index_t* index) {
  void* buffer = nullptr;
  size_t size = 0;
  EXPECT_EQ(qv_index_save_buffer(index, &buffer, &size), QV_OK) << qv_last_error_message();
  Buffer owned(buffer);
  const auto* bytes = static_cast<const uint8_t*>(buffer);
  return std::vector<uint8_t>(bytes, bytes + size);
}

// Searches, range searches and loads under failing allocations: a status, never a crash or a result.
TEST(FaultInjection, SearchRangeSaveAndLoad) {
  Context ctx = MakeCpuContext(2);
  const int64_t dim = 8;
  const std::vector<float> base = ClusteredVectors(200, dim, 4, 1, 2);
  for (const char* descriptor : {"Flat", "IVF4,Flat", "Graph8", "LC8", "SSS0.5"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    ASSERT_NO_FATAL_FAILURE(Fill(index.get(), descriptor, base, dim, 200));
    void* buffer = nullptr;
    size_t size = 0;
    QV_ASSERT_OK(qv_index_save_buffer(index.get(), &buffer, &size));
    Buffer saved(buffer);
    for (long n = 1; n < 400; ++n) {
      std::vector<float> d(30);
      std::vector<int64_t> ids(30);
      qv_status_t s = with_failure_at(n, [&] {
        return qv_index_search(index.get(), 10, base.data(), 3, nullptr, d.data(), ids.data());
      });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_HOST_MEMORY) << qv_status_string(s);
      qv_range_result_t* raw = nullptr;
      s = with_failure_at(n, [&] { return qv_index_range_search(index.get(), 10, base.data(), 4.0f, nullptr, &raw); });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_HOST_MEMORY) << qv_status_string(s);
      ASSERT_EQ(raw != nullptr, s == QV_OK);
      qv_range_result_free(raw);
      qv_index_t* loaded = nullptr;
      s = with_failure_at(n, [&] { return qv_index_load_buffer(ctx.get(), buffer, size, &loaded); });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_HOST_MEMORY) << qv_status_string(s);
      ASSERT_EQ(loaded != nullptr, s == QV_OK);
      qv_index_free(loaded);
    }
    EXPECT_EQ(Count(index.get()), 200);
  }
}

// How many allocations call makes when none fails.
template <typename Call>
long count_allocations(Call call) {
  with_failure_at(std::numeric_limits<long>::max(), call);
  return allocations.load();
}

// The allocations to fail, of a call that makes `total`: every one of the first kEveryAllocation,
// then kSampledAllocations spread evenly over the rest, the last included. (Training makes tens of
// thousands, the same few sites again in every Lloyd iteration; failing each in turn took 292 s,
// and 2 000 points took 208 s under AddressSanitizer.)
constexpr long kEveryAllocation = 400;
constexpr long kSampledAllocations = 400;
std::vector<long> failure_points(long total) {
  std::vector<long> points;
  for (long n = 1; n <= std::min(total, kEveryAllocation); ++n) points.push_back(n);
  const long rest = total - kEveryAllocation;
  for (long i = 1; i <= kSampledAllocations && rest > 0; ++i) {
    const long n = kEveryAllocation + (rest * i + kSampledAllocations - 1) / kSampledAllocations;
    if (n > points.back()) points.push_back(n);
  }
  return points;
}

// Training under failing allocations: the failed call reports out of host memory and leaves the
// index untrained and empty (adds refused); a training without failures trains the same as before.
TEST(FaultInjection, TrainLeavesTheIndexUntrained) {
  Context ctx = MakeCpuContext(1);  // one thread: the same allocations in the same order every call
  const int64_t dim = 8;
  const std::vector<float> base = ClusteredVectors(300, dim, 6, 1, 2);
  const std::vector<float> queries = ClusteredVectors(5, dim, 6, 1, 4);
  for (const char* descriptor : {"IVF8,Flat", "IVF8,PQ4", "OPQ4,IVF8,PQ4"}) {
    SCOPED_TRACE(descriptor);
    Index reference = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    const long total = count_allocations([&] { return qv_index_train(reference.get(), 300, base.data()); });
    QV_ASSERT_OK(qv_index_add(reference.get(), 300, base.data(), nullptr));
    Index index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    for (long n : failure_points(total)) {
      const qv_status_t s = with_failure_at(n, [&] { return qv_index_train(index.get(), 300, base.data()); });
      if (s == QV_OK) {  // an allocation the call can do without
        index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
        continue;
      }
      ASSERT_EQ(s, QV_ERR_OUT_OF_HOST_MEMORY) << "allocation " << n << ": " << qv_last_error_message();
      qv_index_info_t info;
      qv_index_info_init(&info);
      QV_ASSERT_OK(qv_index_info(index.get(), &info));
      ASSERT_EQ(info.is_trained, 0) << "allocation " << n << " left a trained index";
      ASSERT_EQ(qv_index_add(index.get(), 300, base.data(), nullptr), QV_ERR_NOT_TRAINED) << "allocation " << n;
    }
    QV_ASSERT_OK(qv_index_train(index.get(), 300, base.data()));
    QV_ASSERT_OK(qv_index_add(index.get(), 300, base.data(), nullptr));
    EXPECT_EQ(SearchSnapshot(index.get(), queries, dim), SearchSnapshot(reference.get(), queries, dim));
  }
}

// An index file in a directory of its own, and its bytes.
struct SavedFile {
  TempDir dir;
  std::string path = dir.File("index.qv");
  std::vector<uint8_t> bytes;
};

// Saves over an existing file under failing allocations, then on a disk that fills up part way
// (the file size limit, RLIMIT_FSIZE: writes past it fail with EFBIG, as on a full disk): every
// failed save reports its status and leaves the existing file as it was, with no temporary file
// behind; the first save that succeeds writes the index.
TEST(FaultInjection, FailedSavesLeaveTheExistingFileWhole) {
  Context ctx = MakeCpuContext(2);
  const int64_t dim = 8;
  const std::vector<float> base = ClusteredVectors(400, dim, 4, 1, 2);
  for (const char* descriptor : {"Flat", "IVF4,PQ4", "Graph8"}) {
    SCOPED_TRACE(descriptor);
    SavedFile old;
    ASSERT_TRUE(old.dir.ok());
    {
      Index small = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
      ASSERT_NO_FATAL_FAILURE(Fill(small.get(), descriptor, base, dim, 100));
      QV_ASSERT_OK(qv_index_save(small.get(), old.path.c_str()));
      ASSERT_TRUE(ReadFile(old.path, &old.bytes));
    }
    Index index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    ASSERT_NO_FATAL_FAILURE(Fill(index.get(), descriptor, base, dim, 400));
    const std::vector<uint8_t> index_bytes = SavedBytes(index.get());
    auto expect_old_file = [&](const std::string& when) {
      std::vector<uint8_t> now;
      ASSERT_TRUE(ReadFile(old.path, &now)) << when;
      ASSERT_EQ(now, old.bytes) << when << " changed the existing file";
      ASSERT_EQ(old.dir.List(), std::vector<std::string>{"index.qv"}) << when << " left a file behind";
    };

    bool succeeded = false;
    for (long n = 1; n < 100000 && !succeeded; ++n) {
      void* copy = nullptr;
      size_t copy_size = 0;
      qv_status_t s = with_failure_at(n, [&] { return qv_index_save_buffer(index.get(), &copy, &copy_size); });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_HOST_MEMORY) << qv_status_string(s);
      ASSERT_EQ(copy != nullptr, s == QV_OK);
      qv_buffer_free(copy);
      s = with_failure_at(n, [&] { return qv_index_save(index.get(), old.path.c_str()); });
      if (s == QV_OK) {
        succeeded = true;
        break;
      }
      ASSERT_EQ(s, QV_ERR_OUT_OF_HOST_MEMORY) << "allocation " << n << ": " << qv_last_error_message();
      ASSERT_NO_FATAL_FAILURE(expect_old_file("allocation " + std::to_string(n)));
    }
    ASSERT_TRUE(succeeded);
    std::vector<uint8_t> written;
    ASSERT_TRUE(ReadFile(old.path, &written));
    EXPECT_EQ(written, index_bytes);

    // The disk fills up at every size short of the new file's. Nothing is asserted (or printed)
    // while the limit holds: it applies to every file the process writes.
    QV_ASSERT_OK(qv_index_save(index.get(), old.path.c_str()));  // back to a known file...
    ASSERT_TRUE(ReadFile(old.path, &old.bytes));
    Index other = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);  // ... and a different index
    ASSERT_NO_FATAL_FAILURE(Fill(other.get(), descriptor, base, dim, 250));
    const std::vector<uint8_t> other_bytes = SavedBytes(other.get());
    const rlim_t limits[] = {0, 1, 4096, rlim_t(other_bytes.size() / 2), rlim_t(other_bytes.size() - 1)};
    std::vector<qv_status_t> statuses;
    rlimit previous;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &previous), 0);
    void (*previous_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
    for (rlim_t limit : limits) {
      rlimit full = previous;
      full.rlim_cur = limit;
      if (setrlimit(RLIMIT_FSIZE, &full) != 0) break;
      statuses.push_back(qv_index_save(other.get(), old.path.c_str()));
      setrlimit(RLIMIT_FSIZE, &previous);
      if (statuses.back() != QV_OK) ASSERT_NO_FATAL_FAILURE(expect_old_file("a disk full at " + std::to_string(limit)));
    }
    std::signal(SIGXFSZ, previous_handler);
    ASSERT_EQ(statuses.size(), std::size(limits));
    for (qv_status_t s : statuses) EXPECT_EQ(s, QV_ERR_IO) << qv_status_string(s);
    QV_ASSERT_OK(qv_index_save(other.get(), old.path.c_str()));
    ASSERT_TRUE(ReadFile(old.path, &written));
    EXPECT_EQ(written, other_bytes);
  }
}

}  // namespace
