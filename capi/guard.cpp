#include "capi/guard.h"

#include <exception>
#include <new>

namespace quiver::capi {

namespace {
thread_local std::string last_error;
}

void clear_error() { last_error.clear(); }

const char* last_error_message() { return last_error.c_str(); }

qv_status_t set_error(qv_status_t status, const std::string& message) {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message: the status alone must do
  }
  return status;
}

qv_status_t translate_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return set_error(static_cast<qv_status_t>(e.status()), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(QV_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(QV_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return set_error(QV_ERR_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace quiver::capi

