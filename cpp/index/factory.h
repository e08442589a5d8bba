// Descriptor strings ("Flat", "IVF4096,Flat", "OPQ32,IVF4096,PQ32,Refine", ...) to index objects
// (inverted-file descriptors: cpp/index/ivf_spec.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cpp/index/index.h"

namespace quiver {

// Throws invalid_argument for an unknown or malformed descriptor, dim or metric; unsupported when
// the kind cannot run on an explicit CUDA context.
std::unique_ptr<Index> create_index(Context& context, const std::string& descriptor, int64_t dim,
                                    Metric metric);

}  // namespace quiver
