// Status codes of the engine; the values are those of qv_status_code in quiver.h.
#pragma once

namespace quiver {

enum class Status : int {
  ok = 0,
  invalid_argument = 1,
  out_of_host_memory = 2,
  out_of_device_memory = 3,
  cuda_error = 4,
  no_device = 5,
  not_trained = 6,
  unsupported = 7,
  io_error = 8,
  corrupt_data = 9,
  version_mismatch = 10,
  internal = 11,
  cancelled = 12,
  too_many_results = 13,
  remote = 14,  // a distributed call failed on another process, or it did not answer in time
};

}  // namespace quiver
