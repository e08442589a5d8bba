#include "cpp/multi/multi_spec.h"

#include <algorithm>

#include "cpp/core/error.h"

namespace quiver {

namespace {

constexpr char kSyntax[] =
    " (multi-device descriptors: \"Sharded<S>,<kind>\", \"Replicated<R>,<kind>\", "
    "\"Replicated,Sharded<S>,<kind>\" or \"Routed<S>,LC<b>\", S and R 1 .. 64 or left out for one per "
    "device, e.g. \"Sharded,IVF4096,Flat\", \"Replicated2,Flat\", \"Routed4,LC64\")";

[[noreturn]] void bad(const std::string& descriptor, const std::string& why) {
  fail(Status::invalid_argument, "descriptor \"", descriptor, "\": ", why, kSyntax);
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

bool is_multi_descriptor(const std::string& descriptor) {
  return starts_with(descriptor, "Sharded") || starts_with(descriptor, "Replicated") ||
         starts_with(descriptor, "Routed");
}

MultiSpec parse_multi_descriptor(const std::string& descriptor) {
  MultiSpec spec;
  size_t word = 7;
  if (starts_with(descriptor, "Replicated")) {
    spec.mode = MultiSpec::Mode::replicated;
    word = 10;
  } else if (starts_with(descriptor, "Routed")) {
    spec.mode = MultiSpec::Mode::routed;
    word = 6;
  }
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
  if (spec.mode == MultiSpec::Mode::routed && !starts_with(spec.child, "LC"))
    bad(descriptor, "\"Routed\" places and routes by clusters: its parts are \"LC<b>\"");
  if (is_multi_descriptor(spec.child)) {
    const MultiSpec inner = parse_multi_descriptor(spec.child);
    if (spec.mode != MultiSpec::Mode::replicated || inner.mode != MultiSpec::Mode::sharded)
      bad(descriptor, "the only nesting is \"Replicated,Sharded<S>,<kind>\"");
    if (inner.parts == 0) bad(descriptor, "a \"Sharded\" inside \"Replicated\" needs its shard count S");
    if (is_multi_descriptor(inner.child)) bad(descriptor, "too many levels");
  }
  return spec;
}

}  // namespace quiver
