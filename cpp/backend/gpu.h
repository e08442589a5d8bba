// What the engine knows of the CUDA backend. Implemented in cuda/ when quiver is built with CUDA,
// and by backend/no_gpu.cpp otherwise, so the engine has no #ifdef of its own.
#pragma once

#include <string>

namespace quiver::gpu {

// Usable CUDA devices; 0 when the build has no CUDA, no driver is loaded or no GPU is present.
int device_count();

// Why device_count() is 0, in words for an error message.
std::string unavailable_reason();

}  // namespace quiver::gpu
