#include "cpp/index/graph_spec.h"

#include <algorithm>
#include <vector>

#include "cpp/core/error.h"
#include "cpp/graph/hash_codes.h"

namespace quiver {

namespace {

// Digits enough for any accepted value, few enough that the number cannot overflow.
constexpr size_t kMaxDigits = 9;
constexpr char kSyntax[] =
    " (graph descriptors: \"Graph<R>\", then optionally \",K<k>\" and \",H<bits>\" in that order, R the "
    "out-degree 2 .. 1024, k the k-NN graph's neighbours R/2 .. 2047, bits the hash codes' length, a "
    "multiple of 32 in 32 .. 1024; e.g. \"Graph32\", \"Graph32,K64\", \"Graph32,H256\")";

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
  spec.knn_k = std::min<int64_t>(degree, kMaxGraphKnnK);
  std::vector<std::string> options;
  for (size_t start = comma; start != std::string::npos;) {
    const size_t next = descriptor.find(',', start + 1);
    options.push_back(descriptor.substr(start + 1, next == std::string::npos ? std::string::npos : next - start - 1));
    start = next;
  }
  size_t i = 0;
  if (i < options.size() && !options[i].empty() && options[i][0] == 'K') {
    const int64_t k = number(descriptor, options[i], 1, "the k-NN graph's k");
    if (k < (degree + 1) / 2 || k > kMaxGraphKnnK)
      bad(descriptor, "K = " + std::to_string(k) + " is outside R/2 = " + std::to_string((degree + 1) / 2) +
                          " .. " + std::to_string(kMaxGraphKnnK));
    spec.knn_k = k;
    ++i;
  }
  if (i < options.size() && !options[i].empty() && options[i][0] == 'H') {
    const int64_t bits = number(descriptor, options[i], 1, "the hash codes' bits");
    if (bits < kMinHashBits || bits > kMaxHashBits || bits % 32 != 0)
      bad(descriptor, "H = " + std::to_string(bits) + " is not a multiple of 32 in " + std::to_string(kMinHashBits) +
                          " .. " + std::to_string(kMaxHashBits));
    spec.hash_bits = static_cast<int32_t>(bits);
    ++i;
  }
  if (i < options.size())
    bad(descriptor, "\"" + options[i] + "\" is not an option of a graph index here");
  return spec;
}

}  // namespace quiver
