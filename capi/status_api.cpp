// Status names, the thread's error message and versions.
#include "capi/guard.h"

extern "C" {

const char* qv_status_string(qv_status_t status) {
  switch (status) {
    case QV_OK: return "QV_OK";
    case QV_ERR_INVALID_ARGUMENT: return "QV_ERR_INVALID_ARGUMENT";
    case QV_ERR_OUT_OF_HOST_MEMORY: return "QV_ERR_OUT_OF_HOST_MEMORY";
    case QV_ERR_OUT_OF_DEVICE_MEMORY: return "QV_ERR_OUT_OF_DEVICE_MEMORY";
    case QV_ERR_CUDA: return "QV_ERR_CUDA";
    case QV_ERR_NO_DEVICE: return "QV_ERR_NO_DEVICE";
    case QV_ERR_NOT_TRAINED: return "QV_ERR_NOT_TRAINED";
    case QV_ERR_UNSUPPORTED: return "QV_ERR_UNSUPPORTED";
    case QV_ERR_IO: return "QV_ERR_IO";
    case QV_ERR_CORRUPT_DATA: return "QV_ERR_CORRUPT_DATA";
    case QV_ERR_VERSION_MISMATCH: return "QV_ERR_VERSION_MISMATCH";
    case QV_ERR_INTERNAL: return "QV_ERR_INTERNAL";
    case QV_ERR_CANCELLED: return "QV_ERR_CANCELLED";
    case QV_ERR_TOO_MANY_RESULTS: return "QV_ERR_TOO_MANY_RESULTS";
    case QV_ERR_REMOTE: return "QV_ERR_REMOTE";
    default: return "QV_ERR_UNKNOWN";
  }
}

const char* qv_last_error_message(void) { return quiver::capi::last_error_message(); }

uint32_t qv_version(void) { return QV_VERSION_NUMBER; }

const char* qv_version_string(void) { return QV_VERSION_STRING; }

uint32_t qv_abi_version(void) { return QV_ABI_VERSION; }

}  // extern "C"
