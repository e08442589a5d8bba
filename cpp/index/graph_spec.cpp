#include "cpp/index/graph_spec.h"

#include <algorithm>

#include "cpp/core/error.h"

namespace quiver {

namespace {

// Digits enough for any accepted value, few enough that the number cannot overflow.
constexpr size_t kMaxDigits = 9;
constexpr char kSyntax[] =
    " (graph descriptors: \"Graph<R>\" or \"Graph<R>,K<k>\", R the out-degree 2 .. 1024, k the k-NN "
    "graph's neighbours R/2 .. 2047, e.g. \"Graph32\", \"Graph32,K64\")";

[[noreturn]] void bad(const std::string& descriptor, const std::string& why) {
  fail(Status::invalid_argument, "descriptor \"", descriptor, "\": ", why, kSyntax);
}

// The number that makes up all of part after its prefix.
int64_t number(const std::string& descriptor, const std::string& part, size_t prefix, const char* what) {
  const std::string digits = part.substr(prefix);
  if (digits.empty() || digits.size() > kMaxDigits ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    bad(descriptor, "\"" + part + "\" needs " + what + " after \"" + part.substr(0, prefix) + "\"");
  return std::stoll(digits);
}

}  // namespace

bool is_graph_descriptor(const std::string& descriptor) { return descriptor.rfind("Graph", 0) == 0; }

GraphSpec parse_graph_descriptor(const std::string& descriptor) {
  GraphSpec spec;
  const size_t comma = descriptor.find(',');
  const std::string head = descriptor.substr(0, comma);
  const int64_t degree = number(descriptor, head, 5, "the out-degree R");
  if (degree < kMinGraphDegree || degree > kMaxGraphDegree)
    bad(descriptor, "R = " + std::to_string(degree) + " is outside " + std::to_string(kMinGraphDegree) +
                        " .. " + std::to_string(kMaxGraphDegree));
  spec.degree = static_cast<int32_t>(degree);
  spec.knn_k = std::min<int64_t>(2 * degree, kMaxGraphKnnK);
  if (comma == std::string::npos) return spec;
  const std::string option = descriptor.substr(comma + 1);
  if (option.empty() || option[0] != 'K' || option.find(',') != std::string::npos)
    bad(descriptor, "\"" + option + "\" is not an option of a graph index (only one \",K<k>\" may follow)");
  const int64_t k = number(descriptor, option, 1, "the k-NN graph's k");
  if (k < (degree + 1) / 2 || k > kMaxGraphKnnK)
    bad(descriptor, "K = " + std::to_string(k) + " is outside R/2 = " + std::to_string((degree + 1) / 2) +
                        " .. " + std::to_string(kMaxGraphKnnK));
  spec.knn_k = k;
  return spec;
}

}  // namespace quiver
