#include "cpp/metric/metric_spec.h"

#include <algorithm>
#include <cstdlib>

#include "cpp/core/error.h"

namespace quiver {

namespace {

constexpr size_t kMaxDigits = 9;
constexpr char kSyntax[] =
    " (metric-space descriptors: \"LC<b>\", b = 1 .. 65536 objects a cluster, e.g. \"LC32\"; "
    "\"SSS<alpha>\" or \"SSS<alpha>,P<p>\", alpha in (0, 2], p = 1 .. 1024 pivots at most (default "
    "64), e.g. \"SSS0.4\", \"SSS0.5,P32\")";

[[noreturn]] void bad(const std::string& descriptor, const std::string& why) {
  fail(Status::invalid_argument, "descriptor \"", descriptor, "\": ", why, kSyntax);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= kMaxDigits &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int64_t whole_number(const std::string& descriptor, const std::string& text, const char* what) {
  if (!all_digits(text)) bad(descriptor, std::string("needs ") + what);
  return std::stoll(text);
}

// A plain decimal: digits with at most one point, no sign or exponent.
float decimal(const std::string& descriptor, const std::string& text, const char* what) {
  const size_t point = text.find('.');
  const std::string whole = text.substr(0, point);
  const std::string fraction = point == std::string::npos ? "" : text.substr(point + 1);
  const bool ok = (whole.empty() || all_digits(whole)) && (fraction.empty() || all_digits(fraction)) &&
                  !(whole.empty() && fraction.empty());
  if (!ok) bad(descriptor, std::string("needs ") + what);
  return std::strtof(text.c_str(), nullptr);
}

}  // namespace

bool is_metric_descriptor(const std::string& descriptor) {
  return descriptor.rfind("LC", 0) == 0 || descriptor.rfind("SSS", 0) == 0;
}

MetricSpec parse_metric_descriptor(const std::string& descriptor) {
  MetricSpec spec;
  if (descriptor.rfind("LC", 0) == 0) {
    spec.method = gpu::MetricMethod::list_of_clusters;
    spec.bucket = whole_number(descriptor, descriptor.substr(2), "the cluster size b after \"LC\"");
    if (spec.bucket < 1 || spec.bucket > kMaxClusterSize)
      bad(descriptor, "b = " + std::to_string(spec.bucket) + " is outside 1 .. 65536");
    return spec;
  }
  spec.method = gpu::MetricMethod::sss;
  spec.max_pivots = kDefaultPivots;
  const size_t comma = descriptor.find(',');
  spec.alpha = decimal(descriptor, descriptor.substr(3, comma == std::string::npos ? std::string::npos : comma - 3),
                       "alpha, a decimal like 0.4, after \"SSS\"");
  if (!(spec.alpha > 0.0f && spec.alpha <= 2.0f)) bad(descriptor, "alpha must be in (0, 2]");
  if (comma == std::string::npos) return spec;
  const std::string option = descriptor.substr(comma + 1);
  if (option.empty() || option[0] != 'P')
    bad(descriptor, "\"" + option + "\" is not an option of an SSS index (only \",P<p>\" may follow)");
  spec.max_pivots = whole_number(descriptor, option.substr(1), "the pivot cap p after \"P\"");
  if (spec.max_pivots < 1 || spec.max_pivots > kMaxPivots)
    bad(descriptor, "p = " + std::to_string(spec.max_pivots) + " is outside 1 .. 1024");
  return spec;
}

}  // namespace quiver
