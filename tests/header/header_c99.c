/* quiver.h compiles as strict C99 (-std=c99 -Wall -Wextra -pedantic -Werror), on its own, and the
 * library linked matches the header it was built from. */
#include "quiver/quiver.h"
#include "quiver/quiver_mpi.h" /* declarations only: compiles without mpi.h */

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Compile-time checks in C99: an array of negative size fails the build. */
#define QV_TEST_ASSERT(name, cond) typedef char qv_test_assert_##name[(cond) ? 1 : -1]

QV_TEST_ASSERT(ok_is_zero, QV_OK == 0);
QV_TEST_ASSERT(version_number, QV_VERSION_NUMBER ==
                                   QV_VERSION_MAJOR * 10000 + QV_VERSION_MINOR * 100 + QV_VERSION_PATCH);
QV_TEST_ASSERT(abi_positive, QV_ABI_VERSION >= 1);
QV_TEST_ASSERT(max_k, QV_MAX_K >= 1);
QV_TEST_ASSERT(status_is_int32, sizeof(qv_status_t) == 4);
QV_TEST_ASSERT(ctx_opts_size_first, offsetof(qv_context_options_t, struct_size) == 0);
QV_TEST_ASSERT(search_size_first, offsetof(qv_search_params_t, struct_size) == 0);
QV_TEST_ASSERT(kmeans_size_first, offsetof(qv_kmeans_params_t, struct_size) == 0);
QV_TEST_ASSERT(info_size_first, offsetof(qv_index_info_t, struct_size) == 0);

static int failures = 0;

static void check(int cond, const char *what) {
  if (!cond) {
    fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

int main(void) {
  qv_context_options_t opts;
  qv_search_params_t sp;
  qv_kmeans_params_t kp;
  qv_index_info_t info;
  qv_metric_t metric = QV_METRIC_L2;
  qv_device_kind_t device = QV_DEVICE_AUTO;
  qv_context_t *ctx = NULL;
  qv_index_t *index = NULL;
  qv_range_result_t *range = NULL;
  qv_status_t (*search)(const qv_index_t *, int64_t, const float *, uint32_t,
                        const qv_search_params_t *, float *, int64_t *) = qv_index_search;

  check(qv_version() == QV_VERSION_NUMBER, "qv_version() == QV_VERSION_NUMBER");
  check(qv_abi_version() == QV_ABI_VERSION, "qv_abi_version() == QV_ABI_VERSION");
  check(strcmp(qv_version_string(), QV_VERSION_STRING) == 0, "qv_version_string() == QV_VERSION_STRING");
  check(strcmp(qv_status_string(QV_OK), "QV_OK") == 0, "qv_status_string(QV_OK)");
  check(strcmp(qv_status_string(QV_ERR_INVALID_ARGUMENT), "QV_ERR_INVALID_ARGUMENT") == 0,
        "qv_status_string(QV_ERR_INVALID_ARGUMENT)");
  check(qv_last_error_message() != NULL, "qv_last_error_message() != NULL");

  check(qv_context_options_init(&opts) == QV_OK, "qv_context_options_init");
  check(opts.struct_size == sizeof opts, "context options struct_size");
  check(qv_search_params_init(&sp) == QV_OK, "qv_search_params_init");
  check(sp.struct_size == sizeof sp, "search params struct_size");
  check(qv_kmeans_params_init(&kp) == QV_OK, "qv_kmeans_params_init");
  check(kp.struct_size == sizeof kp, "kmeans params struct_size");
  check(qv_index_info_init(&info) == QV_OK, "qv_index_info_init");
  check(info.struct_size == sizeof info, "index info struct_size");
  check(qv_search_params_init(NULL) == QV_ERR_INVALID_ARGUMENT, "qv_search_params_init(NULL)");

  /* NULL handles are no-ops. */
  qv_index_free(index);
  qv_context_free(ctx);
  qv_range_result_free(range);
  qv_buffer_free(NULL);

  (void)metric;
  (void)device;
  (void)search;
  if (failures == 0) printf("quiver %s (ABI %u): header OK as C99\n", qv_version_string(), qv_abi_version());
  return failures == 0 ? 0 : 1;
}
