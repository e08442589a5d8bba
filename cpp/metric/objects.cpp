#include "cpp/metric/objects.h"

#include "cpp/core/error.h"

namespace quiver {

void check_strings(const char* what, const Strings& strings) {
  require(strings.n >= 0, what, ": n = ", strings.n, " is negative");
  if (strings.n == 0) return;
  require(strings.offsets != nullptr, what, ": offsets is NULL");
  require(strings.offsets[0] >= 0, what, ": offsets[0] = ", strings.offsets[0], " is negative");
  for (int64_t i = 0; i < strings.n; ++i) {
    const int64_t length = strings.length(i);
    require(length >= 0, what, ": string ", i, " ends before it starts (offsets[", i, "] = ",
            strings.offsets[i], ", offsets[", i + 1, "] = ", strings.offsets[i + 1], ")");
    require(length <= kMaxStringBytes, what, ": string ", i, " is ", length, " bytes, more than ",
            kMaxStringBytes);
  }
  require(strings.bytes != nullptr || strings.offsets[strings.n] == strings.offsets[0], what,
          ": bytes is NULL but the strings are not all empty");
}

}  // namespace quiver
