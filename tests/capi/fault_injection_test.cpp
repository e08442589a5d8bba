// Fault injection: every host allocation a call makes fails in turn (the replaced global operator
// new of this test binary, which libquiver.so's C++ code also uses), and the call must return
// QV_ERR_OUT_OF_HOST_MEMORY (or succeed, where the allocation was optional) without crashing,
// leaking (the sanitizer build checks) or changing the index: the same count and the same answers.
#include <atomic>
#include <cstdlib>
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

// Searches, range searches and loads under failing allocations: a status, never a crash or a result.
TEST(FaultInjection, SearchRangeSaveAndLoad) {
  Context ctx = MakeCpuContext(2);
  const int64_t dim = 8;
  const std::vector<float> base = ClusteredVectors(200, dim, 4, 1, 2);
  for (const char* descriptor : {"Flat", "IVF4,Flat", "Graph8", "LC8", "SSS0.5"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    if (std::string(descriptor).rfind("IVF", 0) == 0) QV_ASSERT_OK(qv_index_train(index.get(), 200, base.data()));
    QV_ASSERT_OK(qv_index_add(index.get(), 200, base.data(), nullptr));
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

}  // namespace
