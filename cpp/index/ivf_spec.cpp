#include "cpp/index/ivf_spec.h"

#include <algorithm>
#include <vector>

#include "cpp/core/error.h"
#include "cpp/index/index.h"

namespace quiver {

namespace {

// Digits enough for any accepted count, few enough that the value cannot overflow.
constexpr size_t kMaxDigits = 9;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (;;) {
    const size_t comma = s.find(',', begin);
    parts.push_back(s.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) return parts;
    begin = comma + 1;
  }
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

class Parser {
 public:
  Parser(const std::string& descriptor, int64_t dim) : descriptor_(descriptor), dim_(dim) {}

  [[noreturn]] void bad(const std::string& why) const {
    fail(Status::invalid_argument, "descriptor \"", descriptor_, "\": ", why,
         " (inverted-file descriptors: \"IVF<nlist>,Flat\", \"IVF<nlist>,PQ<M>\", "
         "\"OPQ<M>,IVF<nlist>,PQ<M>\", optionally followed by \",Refine\" (PQ only) and \",HostIds\")");
  }

  // The decimal number after `prefix` in `part` (which starts with it); `suffix` may follow.
  int64_t number(const std::string& part, size_t prefix, const char* what, const char* suffix = "") const {
    size_t end = prefix;
    while (end < part.size() && part[end] >= '0' && part[end] <= '9') ++end;
    if (end == prefix) bad("\"" + part + "\" needs " + what + " after \"" + part.substr(0, prefix) + "\"");
    if (part.substr(end) != suffix)
      bad("\"" + part + "\" is malformed: unexpected \"" + part.substr(end) + "\"");
    if (end - prefix > kMaxDigits) bad(std::string(what) + " in \"" + part + "\" is too large");
    return std::stoll(part.substr(prefix, end - prefix));
  }

  void check_m(const char* name, int64_t m) const {
    const std::string label = std::string(name) + std::to_string(m);
    if (m < 1) bad(label + ": M must be at least 1");
    if (m > dim_) bad(label + ": M = " + std::to_string(m) + " exceeds dim = " + std::to_string(dim_));
    if (m > kMaxPqM) bad(label + ": M = " + std::to_string(m) + " exceeds the largest supported, " +
                         std::to_string(kMaxPqM));
    if (dim_ % m != 0)
      bad(label + ": M = " + std::to_string(m) + " does not divide dim = " + std::to_string(dim_) +
          " (each sub-quantizer takes dim / M dimensions)");
  }

  IvfSpec parse() const {
    IvfSpec spec;
    const std::vector<std::string> parts = split_commas(descriptor_);
    size_t i = 0;
    if (starts_with(parts[i], "OPQ")) {
      spec.opq_m = number(parts[i], 3, "M");
      check_m("OPQ", spec.opq_m);
      ++i;
    }
    if (i >= parts.size() || !starts_with(parts[i], "IVF"))
      bad(i == 0 ? "expected \"IVF<nlist>\" first" : "expected \"IVF<nlist>\" after \"" + parts[0] + "\"");
    spec.nlist = number(parts[i], 3, "nlist (the number of lists)");
    if (spec.nlist < 1) bad("nlist = " + std::to_string(spec.nlist) + " must be at least 1");
    if (spec.nlist > kMaxIvfLists)
      bad("nlist = " + std::to_string(spec.nlist) + " exceeds " + std::to_string(kMaxIvfLists));
    ++i;
    if (i >= parts.size()) bad("\"" + parts[i - 1] + "\" must be followed by \",Flat\" or \",PQ<M>\"");
    const std::string& encoding = parts[i];
    if (encoding == "Flat") {
      spec.pq_m = 0;
    } else if (starts_with(encoding, "PQ")) {
      const size_t x = encoding.find('x');
      if (x != std::string::npos && encoding.substr(x) != "x8")
        bad("\"" + encoding + "\": PQ codes have 8 bits a sub-quantizer (\"PQ<M>\" or \"PQ<M>x8\")");
      spec.pq_m = number(encoding, 2, "M", x == std::string::npos ? "" : "x8");
      check_m("PQ", spec.pq_m);
    } else {
      bad("unknown encoding \"" + encoding + "\" (expected \"Flat\" or \"PQ<M>\")");
    }
    for (++i; i < parts.size(); ++i) {
      bool* flag = parts[i] == "Refine" ? &spec.refine : parts[i] == "HostIds" ? &spec.host_ids : nullptr;
      if (flag == nullptr) bad("unknown option \"" + parts[i] + "\" (expected \"Refine\" or \"HostIds\")");
      if (*flag) bad("\"" + parts[i] + "\" appears twice");
      *flag = true;
    }
    if (spec.opq_m > 0 && !spec.is_pq())
      bad("OPQ rotates vectors for PQ codes; IVF-Flat distances are the same without it (drop \"OPQ" +
          std::to_string(spec.opq_m) + ",\")");
    if (spec.refine && !spec.is_pq()) bad("Refine re-ranks PQ codes; IVF-Flat distances are already exact");
    return spec;
  }

 private:
  const std::string& descriptor_;
  int64_t dim_;
};

}  // namespace

bool is_ivf_descriptor(const std::string& descriptor) {
  return starts_with(descriptor, "IVF") || starts_with(descriptor, "OPQ");
}

IvfSpec parse_ivf_descriptor(const std::string& descriptor, int64_t dim) {
  return Parser(descriptor, dim).parse();
}

int64_t resolve_nprobe(uint32_t nprobe, int64_t nlist) {
  if (nprobe == kNprobeDefault) return std::min(nlist, kDefaultNprobe);
  require(nprobe >= 1 && nprobe <= nlist, "params->nprobe = ", nprobe, " is outside 1 .. nlist = ", nlist,
          " (QV_NPROBE_DEFAULT, the default of qv_search_params_init, lets the index choose)");
  return nprobe;
}

int64_t refine_candidates(uint32_t refine_factor, int64_t k) {
  const int64_t factor = refine_factor == 0 ? kDefaultRefineFactor : refine_factor;
  return std::min(factor * k, std::max(k, kMaxK));
}

}  // namespace quiver
