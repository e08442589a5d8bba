#include "cpp/multi/multi_spec.h"

#include <algorithm>

#include "cpp/core/error.h"

namespace quiver {

namespace {

constexpr char kSyntax[] =
    " (multi-device descriptors: \"Sharded<S>,<kind>\", \"Replicated<R>,<kind>\" or "
    "\"Replicated,Sharded<S>,<kind>\", S and R 1 .. 64 or left out for one per device, e.g. "
    "\"Sharded,IVF4096,Flat\", \"Replicated2,Flat\")";

[[noreturn]] void bad(const std::string& descriptor, const std::string& why) {
  fail(Status::invalid_argument, "descriptor \"", descriptor, "\": ", why, kSyntax);
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

bool is_multi_descriptor(const std::string& descriptor) {
  return starts_with(descriptor, "Sharded") || starts_with(descriptor, "Replicated");
}

MultiSpec parse_multi_descriptor(const std::string& descriptor) {
  MultiSpec spec;
  spec.mode = starts_with(descriptor, "Sharded") ? MultiSpec::Mode::sharded : MultiSpec::Mode::replicated;
  const size_t word = spec.mode == MultiSpec::Mode::sharded ? 7 : 10;
  const size_t comma = descriptor.find(',');
  if (comma == std::string::npos || comma + 1 == descriptor.size())
    bad(descriptor, "the index kind of each part must follow a comma");
  const std::string digits = descriptor.substr(word, comma - word);
  if (!digits.empty()) {
    if (digits.size() > 2 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      bad(descriptor, "\"" + descriptor.substr(0, comma) + "\" is not a count of parts");
    spec.parts = std::stoll(digits);
    if (spec.parts < 1 || spec.parts > kMaxParts)
      bad(descriptor, "the count " + digits + " is outside 1 .. " + std::to_string(kMaxParts));
  }
  spec.child = descriptor.substr(comma + 1);
  if (is_multi_descriptor(spec.child)) {
    const MultiSpec inner = parse_multi_descriptor(spec.child);
    if (spec.mode == MultiSpec::Mode::sharded || inner.mode == MultiSpec::Mode::replicated)
      bad(descriptor, "the only nesting is \"Replicated,Sharded<S>,<kind>\"");
    if (inner.parts == 0) bad(descriptor, "a \"Sharded\" inside \"Replicated\" needs its shard count S");
    if (is_multi_descriptor(inner.child)) bad(descriptor, "too many levels");
  }
  return spec;
}

}  // namespace quiver
