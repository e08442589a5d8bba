// Contexts on different CUDA devices used from different host threads at once (issue: a context on
// device ordinal 1 crashed IVF training, because some allocations ran on the thread's current
// device). Every index kind is trained, filled and searched on device 0 and on the last device
// concurrently, each thread keeping device 0 current; the results must equal one device's. On a
// machine with one GPU both contexts share device 0, which still checks concurrent use.
#include <cuda_runtime.h>

#include <cctype>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "gpu_testing.h"
#include "quiver/quiver.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

struct Answer {
  qv_status_t status = QV_ERR_INTERNAL;
  std::string message;
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

// Train (when the kind needs it), add and search on a new context of `device`, all from this thread.
Answer train_add_search(int device, const char* descriptor, int64_t dim, const std::vector<float>& x,
                        const std::vector<float>& q, uint32_t k) {
  Answer a;
  cudaSetDevice(0);  // what a caller's thread typically has current, whatever the context's device
  qv_context_options_t o;
  qv_context_options_init(&o);
  o.device = QV_DEVICE_CUDA;
  o.device_id = device;
  o.cpu_threads = 2;
  qv_context_t* ctx = nullptr;
  qv_index_t* index = nullptr;
  const int64_t n = static_cast<int64_t>(x.size()) / dim, nq = static_cast<int64_t>(q.size()) / dim;
  a.distances.resize(static_cast<size_t>(nq * k));
  a.ids.resize(static_cast<size_t>(nq * k));
  a.status = qv_context_create(&o, &ctx);
  if (a.status == QV_OK) a.status = qv_index_create(ctx, descriptor, dim, QV_METRIC_L2, &index);
  if (a.status == QV_OK) a.status = qv_index_train(index, n, x.data());
  if (a.status == QV_OK) a.status = qv_index_add(index, n, x.data(), nullptr);
  if (a.status == QV_OK) {
    qv_search_params_t p;
    qv_search_params_init(&p);
    p.nprobe = 8;
    a.status = qv_index_search(index, nq, q.data(), k, &p, a.distances.data(), a.ids.data());
  }
  if (a.status != QV_OK) a.message = qv_last_error_message();
  qv_index_free(index);
  qv_context_free(ctx);
  return a;
}

// An index kind (dim 64), and the kind the sanitizer runs in its place (dim 16): PQ training runs a
// k-means of 50 iterations (a dozen launches each) per sub-quantizer, so there 1 of them instead of
// 16 (2 did not finish in 440 s under racecheck, from two threads at once); the code that runs is
// the same.
struct Kind {
  const char* descriptor;
  const char* under_sanitizer;
};

void PrintTo(const Kind& kind, std::ostream* os) { *os << kind.descriptor; }

class GpuMultiDevice : public ::testing::TestWithParam<Kind> {};

TEST_P(GpuMultiDevice, TwoDevicesFromTwoThreadsMatchOneDevice) {
  QV_REQUIRE_GPU();
  const int last = gpu::device_count() - 1;
  const int64_t n = sized(20011, 4001), dim = sized(64, 16), nq = sized(301, 61);
  const char* descriptor = sanitizer_sizes() ? GetParam().under_sanitizer : GetParam().descriptor;
  const uint32_t k = 10;
  const auto x = uniform_vectors(n, dim, 11), q = uniform_vectors(nq, dim, 12);
  // Under the sanitizer no single-threaded run (a third training): the threads' answers are compared
  // with each other.
  Answer reference;
  if (!sanitizer_sizes()) {
    reference = train_add_search(0, descriptor, dim, x, q, k);
    ASSERT_EQ(reference.status, QV_OK) << reference.message;
  }

  Answer on_first, on_last;
  std::thread first([&] { on_first = train_add_search(0, descriptor, dim, x, q, k); });
  std::thread second([&] { on_last = train_add_search(last, descriptor, dim, x, q, k); });
  first.join();
  second.join();
  if (sanitizer_sizes()) reference = on_first;
  for (const Answer* a : {&on_first, &on_last}) {
    ASSERT_EQ(a->status, QV_OK) << a->message;
    EXPECT_EQ(a->ids, reference.ids);
    EXPECT_EQ(a->distances, reference.distances);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, GpuMultiDevice,
                         ::testing::Values(Kind{"Flat", "Flat"}, Kind{"IVF64,Flat", "IVF64,Flat"},
                                           Kind{"IVF64,PQ16", "IVF64,PQ1"}, Kind{"OPQ16,IVF64,PQ16", "OPQ2,IVF64,PQ2"},
                                           Kind{"IVF64,Flat,HostIds", "IVF64,Flat,HostIds"},
                                           Kind{"IVF64,PQ16,Refine", "IVF64,PQ1,Refine"}),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           std::string name = info.param.descriptor;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace quiver::testing
