// What the exact search reads of a DeviceMatrix (gpu.h) beyond its rows and norms.
#pragma once

#include "cpp/backend/gpu.h"

namespace quiver::gpu {

// The certificate's base statistics of the matrix's rows (certify.h's launch_base_stats, device
// memory, kBaseStatsCount values), kept by every append, so that a search need not read the rows for
// them. Removals keep them: maxima over more rows than remain are still upper bounds.
const unsigned* matrix_base_stats(const DeviceMatrix& matrix);

}  // namespace quiver::gpu
