// The one wrapper every C entry point runs in: it clears the thread's error message, runs the body,
// and turns any exception into a status and a message. Nothing thrown ever crosses the C boundary.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "cpp/core/error.h"
#include "quiver/quiver.h"

namespace quiver::capi {

void clear_error();
const char* last_error_message();
qv_status_t set_error(qv_status_t status, const std::string& message);
qv_status_t translate_current_exception();

template <typename Body>
qv_status_t guarded(Body&& body) noexcept {
  try {
    clear_error();
    body();
    return QV_OK;
  } catch (...) {
    return translate_current_exception();
  }
}

// Argument checks that belong to the C boundary: pointers.
inline void require_pointer(const void* p, const char* name) {
  require(p != nullptr, name, " is NULL");
}

// Copies a caller's versioned params struct: fields beyond the caller's struct_size keep their
// defaults (an older caller); a newer caller's extra fields are accepted only while they are zero
// (their default), since this library cannot honour them.
template <typename T>
T read_params(const T* params, const T& defaults, const char* name) {
  T out = defaults;
  if (params == nullptr) return out;
  const uint32_t size = params->struct_size;
  require(size >= sizeof(uint32_t), name, "->struct_size = ", size,
          " is too small: initialise the struct with its qv_*_init function");
  const auto* bytes = reinterpret_cast<const unsigned char*>(params);
  for (uint32_t i = sizeof(T); i < size; ++i)
    if (bytes[i] != 0)
      fail(Status::unsupported, name, "->struct_size = ", size,
           ": the caller was built against a newer quiver whose fields this library (",
           sizeof(T), " bytes) cannot honour");
  std::memcpy(&out, params, size < sizeof(T) ? size : sizeof(T));
  out.struct_size = sizeof(T);
  return out;
}

}  // namespace quiver::capi
