// Saving and loading indexes: one format for every kind, a common header, the kind's payload, a
// trailing checksum. Layout (little-endian):
//   "QVIX" | u32 format version | u32 kind | u32 metric | i64 dim | i64 count | descriptor (u32 length,
//   bytes) | payload | u64 checksum of everything before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpp/index/index.h"

namespace quiver {

constexpr uint32_t kFormatVersion = 1;

std::vector<uint8_t> save_to_bytes(const Index& index);
std::unique_ptr<Index> load_from_bytes(Context& context, const uint8_t* data, size_t size);

// Writes to a temporary file beside path, then renames it over path.
void save_to_file(const Index& index, const std::string& path);
std::unique_ptr<Index> load_from_file(Context& context, const std::string& path);

}  // namespace quiver
