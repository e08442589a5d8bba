// Status names, the thread-local error message and the version functions.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "test_util.h"

namespace {

using namespace qvtest;

TEST(CapiStatus, EveryCodeHasItsName) {
  struct {
    qv_status_t code;
    const char* name;
  } const cases[] = {
      {QV_OK, "QV_OK"},
      {QV_ERR_INVALID_ARGUMENT, "QV_ERR_INVALID_ARGUMENT"},
      {QV_ERR_OUT_OF_HOST_MEMORY, "QV_ERR_OUT_OF_HOST_MEMORY"},
      {QV_ERR_OUT_OF_DEVICE_MEMORY, "QV_ERR_OUT_OF_DEVICE_MEMORY"},
      {QV_ERR_CUDA, "QV_ERR_CUDA"},
      {QV_ERR_NO_DEVICE, "QV_ERR_NO_DEVICE"},
      {QV_ERR_NOT_TRAINED, "QV_ERR_NOT_TRAINED"},
      {QV_ERR_UNSUPPORTED, "QV_ERR_UNSUPPORTED"},
      {QV_ERR_IO, "QV_ERR_IO"},
      {QV_ERR_CORRUPT_DATA, "QV_ERR_CORRUPT_DATA"},
      {QV_ERR_VERSION_MISMATCH, "QV_ERR_VERSION_MISMATCH"},
      {QV_ERR_INTERNAL, "QV_ERR_INTERNAL"},
      {QV_ERR_CANCELLED, "QV_ERR_CANCELLED"},
      {QV_ERR_TOO_MANY_RESULTS, "QV_ERR_TOO_MANY_RESULTS"},
      {QV_ERR_REMOTE, "QV_ERR_REMOTE"},
  };
  for (const auto& c : cases) {
    const char* s = qv_status_string(c.code);
    ASSERT_NE(s, nullptr) << c.code;
    EXPECT_STREQ(s, c.name) << "code " << c.code;
    // Static: the same pointer each time.
    EXPECT_EQ(qv_status_string(c.code), s);
  }
}

TEST(CapiStatus, UnknownCodes) {
  for (qv_status_t code : {15, 100, -1, -12345, INT32_MAX, INT32_MIN}) {
    const char* s = qv_status_string(code);
    ASSERT_NE(s, nullptr) << code;
    EXPECT_STREQ(s, "QV_ERR_UNKNOWN") << "code " << code;
  }
}

TEST(CapiLastError, EmptyAfterSuccessNonEmptyAfterFailure) {
  qv_search_params_t p;
  EXPECT_EQ(qv_search_params_init(nullptr), QV_ERR_INVALID_ARGUMENT);
  ASSERT_NE(qv_last_error_message(), nullptr);
  EXPECT_STRNE(qv_last_error_message(), "");

  QV_ASSERT_OK(qv_search_params_init(&p));
  ASSERT_NE(qv_last_error_message(), nullptr);
  EXPECT_STREQ(qv_last_error_message(), "");

  // Another failure, then a success of a different function, clears it too.
  int32_t count = -1;
  EXPECT_EQ(qv_cuda_device_count(nullptr), QV_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(qv_last_error_message(), "");
  QV_ASSERT_OK(qv_cuda_device_count(&count));
  EXPECT_STREQ(qv_last_error_message(), "");
}

TEST(CapiLastError, MessageStaysUntilNextCall) {
  EXPECT_EQ(qv_kmeans_params_init(nullptr), QV_ERR_INVALID_ARGUMENT);
  std::string first = qv_last_error_message();
  EXPECT_FALSE(first.empty());
  // Reading it again (no quiver call in between but the getter itself) gives the same text.
  EXPECT_EQ(first, std::string(qv_last_error_message()));
}

TEST(CapiLastError, IsThreadLocal) {
  Context ctx = MakeCpuContext();
  ASSERT_TRUE(ctx);

  // This thread fails.
  qv_index_t* idx = nullptr;
  EXPECT_EQ(qv_index_create(ctx.get(), "NoSuchKind", 4, QV_METRIC_L2, &idx),
            QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(idx, nullptr);
  std::string mine = qv_last_error_message();
  ASSERT_FALSE(mine.empty());

  std::string other_initial = "unset", other_after_success = "unset", other_after_failure;
  std::thread t([&] {
    // A thread that has made no call yet sees no message, not this thread's.
    other_initial = qv_last_error_message();
    qv_search_params_t p;
    if (qv_search_params_init(&p) == QV_OK) other_after_success = qv_last_error_message();
    // And its own failure stays on that thread.
    qv_context_options_init(nullptr);
    other_after_failure = qv_last_error_message();
  });
  t.join();

  EXPECT_EQ(other_initial, "");
  EXPECT_EQ(other_after_success, "");
  EXPECT_FALSE(other_after_failure.empty());
  // The other thread's calls did not touch this thread's message.
  EXPECT_EQ(std::string(qv_last_error_message()), mine);

  // Conversely: a success here while another thread holds a failure leaves the other's intact.
  std::string seen_later;
  std::mutex m;
  std::condition_variable cv;
  int stage = 0;
  std::thread u([&] {
    qv_index_info_init(nullptr);  // fails on thread u
    {
      std::unique_lock<std::mutex> lock(m);
      stage = 1;
      cv.notify_all();
      cv.wait(lock, [&] { return stage == 2; });
    }
    seen_later = qv_last_error_message();
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return stage == 1; });
  }
  qv_search_params_t p;
  QV_EXPECT_OK(qv_search_params_init(&p));  // succeeds on this thread
  EXPECT_STREQ(qv_last_error_message(), "");
  {
    std::lock_guard<std::mutex> lock(m);
    stage = 2;
    cv.notify_all();
  }
  u.join();
  EXPECT_FALSE(seen_later.empty()) << "a success on another thread cleared this thread's message";
}

TEST(CapiVersion, AgreesWithHeaderMacros) {
  EXPECT_EQ(qv_version(), static_cast<uint32_t>(QV_VERSION_NUMBER));
  EXPECT_EQ(
      static_cast<uint32_t>(QV_VERSION_NUMBER),
      static_cast<uint32_t>(QV_VERSION_MAJOR * 10000 + QV_VERSION_MINOR * 100 + QV_VERSION_PATCH));
  EXPECT_EQ(qv_abi_version(), static_cast<uint32_t>(QV_ABI_VERSION));

  const char* s = qv_version_string();
  ASSERT_NE(s, nullptr);
  EXPECT_STREQ(s, QV_VERSION_STRING);
  char expected[64];
  std::snprintf(expected, sizeof expected, "%d.%d.%d", QV_VERSION_MAJOR, QV_VERSION_MINOR,
                QV_VERSION_PATCH);
  EXPECT_STREQ(s, expected);
  EXPECT_EQ(qv_version_string(), s);  // static
}

TEST(CapiVersion, VersionCallsLeaveErrorStateAlone) {
  // The version and name getters cannot fail; they never set a message.
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  (void)qv_version();
  (void)qv_abi_version();
  (void)qv_version_string();
  (void)qv_status_string(QV_ERR_IO);
  EXPECT_STREQ(qv_last_error_message(), "");
}

}  // namespace
