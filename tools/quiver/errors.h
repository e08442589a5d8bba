// The two ways a command fails, so main() can map them to exit codes: 2 for bad usage, 1 for the rest.
#pragma once

#include <stdexcept>
#include <string>

namespace qvtool {

// The user asked for something malformed (unknown option, bad value, wrong data dimension): exit 2.
struct UsageError : std::runtime_error {
  explicit UsageError(const std::string &msg) : std::runtime_error(msg) {}
};

// The request was fine but could not be carried out (I/O, corrupt data, library error): exit 1.
struct Failure : std::runtime_error {
  explicit Failure(const std::string &msg) : std::runtime_error(msg) {}
};

}  // namespace qvtool
