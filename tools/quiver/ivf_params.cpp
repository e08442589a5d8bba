#include "ivf_params.h"

#include <algorithm>
#include <cctype>

namespace qvtool {

// The descriptor's components, split at commas ("OPQ32,IVF1024,PQ32" -> OPQ32 | IVF1024 | PQ32).
static std::vector<std::string> components(const std::string &descriptor) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= descriptor.size()) {
    size_t comma = descriptor.find(',', start);
    if (comma == std::string::npos) comma = descriptor.size();
    out.push_back(descriptor.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int64_t descriptor_nlist(const std::string &descriptor) {
  const std::string prefix = "IVF";
  for (const std::string &c : components(descriptor)) {
    if (c.rfind(prefix, 0) != 0 || c.size() == prefix.size()) continue;
    int64_t nlist = 0;
    size_t i = prefix.size();
    // Only the leading digits: an over-long number is the library's to reject, not ours to overflow.
    for (; i < c.size() && std::isdigit(static_cast<unsigned char>(c[i])) && nlist < (int64_t(1) << 40); ++i)
      nlist = nlist * 10 + (c[i] - '0');
    if (i > prefix.size()) return nlist;
  }
  return 0;
}

std::string descriptor_kind(const std::string &descriptor) {
  size_t start = 0;
  while (descriptor.compare(start, 7, "Sharded") == 0 || descriptor.compare(start, 10, "Replicated") == 0) {
    const size_t comma = descriptor.find(',', start);
    if (comma == std::string::npos) break;  // malformed: the library's to reject
    start = comma + 1;
  }
  return descriptor.substr(start);
}

bool descriptor_has_refine(const std::string &descriptor) {
  const std::vector<std::string> parts = components(descriptor);
  return std::any_of(parts.begin(), parts.end(),
                     [](const std::string &c) { return c.rfind("Refine", 0) == 0 || c == "RFlat"; });
}

std::vector<int64_t> default_nprobe_sweep(int64_t nlist) {
  if (nlist <= 0) return {0};
  std::vector<int64_t> sweep;
  for (int64_t p = 1; p <= std::min(kMaxDefaultNprobe, nlist); p *= 2) sweep.push_back(p);
  return sweep;
}

}  // namespace qvtool
