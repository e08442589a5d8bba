// The one wrapper every C entry point runs in: it clears the thread's error message, runs the body,
// and turns any exception into a status and a message. Nothing thrown ever crosses the C boundary.
#pragma once

#include <cstddef>
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

// Copies a caller's versioned params struct. struct_size must be the size of some version of the
// struct: the end of one of its fields (`field_ends`, in order) or sizeof(T). Fields beyond an older
// caller's struct_size keep their defaults; a newer caller's extra fields are accepted only while
// they are zero (their default), since this library cannot honour them.
template <size_t N>
void check_struct_size(uint32_t size, size_t current, const size_t (&field_ends)[N], const char* name) {
  bool known = size >= current;
  for (size_t end : field_ends) known = known || size == end;
  require(known, name, "->struct_size = ", size,
          " is not the size of any version of this struct: initialise it with its qv_*_init function");
}

template <typename T, size_t N>
T read_params(const T* params, const T& defaults, const char* name, const size_t (&field_ends)[N]) {
  T out = defaults;
  if (params == nullptr) return out;
  const uint32_t size = params->struct_size;
  check_struct_size(size, sizeof(T), field_ends, name);
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

// The end offset of a field, for read_params' list of versions.
#define QV_FIELD_END(type, field) (offsetof(type, field) + sizeof(((type*)nullptr)->field))

}  // namespace quiver::capi
