// Internals shared by the files of cuda/ivf: the device check and the arena's bookkeeping.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/core/resources.h"
#include "cuda/ivf/ivf_device.h"

namespace quiver::gpu {

// invalid_argument when the index and the resources are on different devices.
void check_ivf_device(Resources& resources, const IvfDevice& ivf);

}  // namespace quiver::gpu
