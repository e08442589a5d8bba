// What the exact search reads of a DeviceMatrix (gpu.h) beyond its rows and norms.
#pragma once

#include "cpp/backend/gpu.h"
#include "cuda/flat/half_rows.h"

namespace quiver::gpu {

// The certificate's base statistics of the matrix's rows (certify.h's launch_base_stats, device
// memory, kBaseStatsCount values), kept by every append, so that a search need not read the rows for
// them. Removals keep them: maxima over more rows than remain are still upper bounds.
const unsigned* matrix_base_stats(const DeviceMatrix& matrix);

// The matrix's 16-bit rows (half_rows.h) for searches of a few queries: made by the first call (a
// Session of its own on `resources`), kept while rows are appended (each append rounds its rows
// too), dropped when rows are removed or the storage grows (the next call makes them again). Empty
// (null rows) where the rows do not take them (half_rows_fit, a value beyond half's range) or where
// they would leave less than a quarter of the device's memory free; that too holds until the rows
// change. Searches may call it at the same time; appends and removals need the matrix alone.
HalfRows matrix_half_rows(Resources& resources, const DeviceMatrix& matrix);

}  // namespace quiver::gpu
