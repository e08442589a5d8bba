// A small option parser shared by the subcommands: `--name value`, `--name=value` and flags.
// Every subcommand declares its options up front so `--help` and unknown-option errors come for free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qvtool {

struct OptionSpec {
  std::string name;     // without the leading "--"
  std::string metavar;  // empty for a flag that takes no value
  std::string help;
};

class Options {
 public:
  Options(std::string command, std::string usage, std::string summary, std::vector<OptionSpec> specs);

  // Parses argv[first..argc). Returns false when --help was asked for (the help is already printed).
  // Throws UsageError on an unknown option, a missing value or a stray positional argument.
  bool parse(int argc, char **argv, int first);

  bool has(const std::string &name) const;
  std::optional<std::string> get(const std::string &name) const;
  std::string get_or(const std::string &name, const std::string &fallback) const;
  std::string require(const std::string &name) const;
  int64_t get_int(const std::string &name, int64_t fallback, int64_t min, int64_t max) const;
  std::vector<int64_t> get_int_list(const std::string &name, int64_t min, int64_t max) const;

  void print_help() const;

 private:
  const OptionSpec *find(const std::string &name) const;

  std::string command_, usage_, summary_;
  std::vector<OptionSpec> specs_;
  std::map<std::string, std::string> values_;
};

// Parses a whole decimal integer in [min, max]; `what` names the option in the error.
int64_t parse_int(const std::string &text, const std::string &what, int64_t min, int64_t max);

}  // namespace qvtool
