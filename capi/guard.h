// The one wrapper every C entry point runs in: it clears the thread's error message, runs the body,
// and turns any exception into a status and a message. Nothing thrown ever crosses the C boundary.
// Also the checks and conversions the entry points share (pointers, versioned params, callbacks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "cpp/core/error.h"
#include "cpp/core/progress.h"
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

// Larger than any parameter struct a future header could declare: a size beyond it is a mistake.
constexpr size_t kMaxParamsStructSize = 1 << 16;

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

// Fills a caller's versioned params struct of `size` bytes (the sizeof in the caller's header, which
// qv_*_init_sized receives) with defaults: struct_size = size, the fields this library knows their
// defaults, and a newer header's further fields zero (their defaults; read_params accepts them while
// they stay zero). Writing only `size` bytes is what keeps a program built against an older, smaller
// struct safe when the library's struct grows.
template <typename T, size_t N>
void init_params(T* params, size_t size, const T& defaults, const char* name, const size_t (&field_ends)[N]) {
  require_pointer(params, name);
  require(size <= kMaxParamsStructSize, "size = ", size, " is not the size of a parameter struct");
  check_struct_size(static_cast<uint32_t>(size), sizeof(T), field_ends, name);
  T value = defaults;
  value.struct_size = static_cast<uint32_t>(size);
  std::memcpy(params, &value, size < sizeof(T) ? size : sizeof(T));
  if (size > sizeof(T)) std::memset(reinterpret_cast<unsigned char*>(params) + sizeof(T), 0, size - sizeof(T));
}

// The end offset of a field, for read_params' list of versions.
#define QV_FIELD_END(type, field) (offsetof(type, field) + sizeof(((type*)nullptr)->field))

// The engine's callback for a qv_progress_fn_t (empty for NULL): nonzero from fn cancels. The
// engine calls it on the calling thread only (cpp/core/progress.h), so a binding may call back into
// its own runtime from it.
inline ProgressFn progress_callback(qv_progress_fn_t fn, void* user_data) {
  if (fn == nullptr) return {};
  return [fn, user_data](double fraction) { return fn(fraction, user_data) == 0; };
}

}  // namespace quiver::capi
