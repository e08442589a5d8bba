// What the C API drivers of bench/multi share: stopping on a failed call, and an index's device memory.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "quiver/quiver.h"

namespace bench {

// Exits with the call, its status and quiver's message when status is not QV_OK.
inline void check(qv_status_t status, const char* what) {
  if (status == QV_OK) return;
  std::fprintf(stderr, "%s: %s: %s\n", what, qv_status_string(status), qv_last_error_message());
  std::exit(1);
}

inline double device_gib(const qv_index_t* index) {
  qv_index_info_t info;
  check(qv_index_info_init(&info), "qv_index_info_init");
  check(qv_index_info(index, &info), "qv_index_info");
  return static_cast<double>(info.device_bytes) / (1u << 30);
}

}  // namespace bench
