// Search parameters from the C struct to the engine's options.
#pragma once

#include "cpp/index/index.h"
#include "quiver/quiver.h"

namespace quiver::capi {

SearchOptions search_options(const qv_search_params_t* params);

}  // namespace quiver::capi
