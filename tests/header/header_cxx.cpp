// quiver.h compiles as C++ (C++11, -Wall -Wextra -pedantic -Werror), on its own, with C linkage.
#include "quiver/quiver.h"
#include "quiver/quiver_mpi.h"  // declarations only: compiles without mpi.h

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(QV_OK == 0, "QV_OK must be 0");
static_assert(QV_VERSION_NUMBER ==
                  QV_VERSION_MAJOR * 10000 + QV_VERSION_MINOR * 100 + QV_VERSION_PATCH,
              "QV_VERSION_NUMBER");
static_assert(std::is_same<qv_status_t, int32_t>::value, "qv_status_t is int32_t");
static_assert(std::is_standard_layout<qv_search_params_t>::value, "plain C struct");
static_assert(std::is_trivially_copyable<qv_search_params_t>::value, "plain C struct");
static_assert(std::is_standard_layout<qv_index_info_t>::value, "plain C struct");
static_assert(offsetof(qv_search_params_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(qv_kmeans_params_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(qv_context_options_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(qv_index_info_t, struct_size) == 0, "struct_size first");

// A pointer to a C-linkage function type: the declarations are inside extern "C".
extern "C" {
typedef qv_status_t (*qv_test_search_fn)(const qv_index_t *, int64_t, const float *, uint32_t,
                                         const qv_search_params_t *, float *, int64_t *);
}

int main() {
  int failures = 0;
  auto check = [&failures](bool cond, const char *what) {
    if (!cond) {
      std::fprintf(stderr, "FAILED: %s\n", what);
      ++failures;
    }
  };
  qv_test_search_fn search = &qv_index_search;
  check(search != nullptr, "qv_index_search resolves");
  check(qv_version() == QV_VERSION_NUMBER, "qv_version() == QV_VERSION_NUMBER");
  check(qv_abi_version() == QV_ABI_VERSION, "qv_abi_version() == QV_ABI_VERSION");
  check(std::strcmp(qv_status_string(QV_ERR_NOT_TRAINED), "QV_ERR_NOT_TRAINED") == 0,
        "qv_status_string(QV_ERR_NOT_TRAINED)");
  qv_search_params_t sp;
  check(qv_search_params_init(&sp) == QV_OK && sp.struct_size == sizeof sp, "qv_search_params_init");
  qv_index_free(nullptr);
  qv_context_free(nullptr);
  if (failures == 0) std::printf("quiver %s: header OK as C++\n", qv_version_string());
  return failures == 0 ? 0 : 1;
}
