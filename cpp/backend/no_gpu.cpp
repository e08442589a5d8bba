// The GPU backend of a build without CUDA.
#ifndef QUIVER_HAVE_CUDA

#include "cpp/backend/gpu.h"

namespace quiver::gpu {

int device_count() { return 0; }

std::string unavailable_reason() { return "this build of quiver has no CUDA backend (QUIVER_CUDA=OFF)"; }

}  // namespace quiver::gpu

#endif
