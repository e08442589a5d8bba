#include "cli.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "errors.h"

namespace qvtool {

Options::Options(std::string command, std::string usage, std::string summary,
                 std::vector<OptionSpec> specs)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)),
      specs_(std::move(specs)) {
  specs_.push_back({"help", "", "print this help and exit"});
}

const OptionSpec *Options::find(const std::string &name) const {
  for (const auto &s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

bool Options::parse(int argc, char **argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw UsageError("quiver " + command_ + ": unexpected argument '" + arg + "' (see --help)");
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec *spec = find(name);
    if (!spec) throw UsageError("quiver " + command_ + ": unknown option --" + name + " (see --help)");
    if (name == "help") {
      print_help();
      return false;
    }
    if (spec->metavar.empty()) {
      if (inline_value) throw UsageError("quiver " + command_ + ": --" + name + " takes no value");
      values_[name] = "1";
      continue;
    }
    if (inline_value) {
      values_[name] = *inline_value;
    } else {
      if (i + 1 >= argc) throw UsageError("quiver " + command_ + ": --" + name + " needs a value");
      values_[name] = argv[++i];
    }
  }
  return true;
}

bool Options::has(const std::string &name) const { return values_.count(name) != 0; }

std::optional<std::string> Options::get(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Options::get_or(const std::string &name, const std::string &fallback) const {
  auto v = get(name);
  return v ? *v : fallback;
}

std::string Options::require(const std::string &name) const {
  auto v = get(name);
  if (!v) throw UsageError("quiver " + command_ + ": --" + name + " is required (see --help)");
  return *v;
}

int64_t Options::get_int(const std::string &name, int64_t fallback, int64_t min, int64_t max) const {
  auto v = get(name);
  return v ? parse_int(*v, "--" + name, min, max) : fallback;
}

std::vector<int64_t> Options::get_int_list(const std::string &name, int64_t min, int64_t max) const {
  std::vector<int64_t> out;
  auto v = get(name);
  if (!v) return out;
  size_t start = 0;
  while (start <= v->size()) {
    size_t comma = v->find(',', start);
    if (comma == std::string::npos) comma = v->size();
    out.push_back(parse_int(v->substr(start, comma - start), "--" + name, min, max));
    start = comma + 1;
  }
  return out;
}

void Options::print_help() const {
  std::printf("usage: quiver %s %s\n\n%s\n\noptions:\n", command_.c_str(), usage_.c_str(),
              summary_.c_str());
  for (const auto &s : specs_) {
    std::string left = "--" + s.name + (s.metavar.empty() ? "" : " " + s.metavar);
    std::printf("  %-24s %s\n", left.c_str(), s.help.c_str());
  }
}

int64_t parse_int(const std::string &text, const std::string &what, int64_t min, int64_t max) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError(what + ": '" + text + "' is not an integer");
  if (v < min || v > max)
    throw UsageError(what + ": " + text + " is out of range [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  return v;
}

}  // namespace qvtool
