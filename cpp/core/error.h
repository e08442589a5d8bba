// The one exception type of the engine: a status plus a message for the caller. The C boundary turns
// it into a qv_status_t and the thread's error message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "cpp/core/status.h"

namespace quiver {

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// Builds the message from any streamable parts: fail(Status::invalid_argument, "k = ", k, " ...").
template <typename... Parts>
[[noreturn]] void fail(Status status, Parts&&... parts) {
  std::ostringstream message;
  (message << ... << std::forward<Parts>(parts));
  throw Error(status, message.str());
}

template <typename... Parts>
void require(bool condition, Parts&&... parts) {
  if (!condition) fail(Status::invalid_argument, std::forward<Parts>(parts)...);
}

}  // namespace quiver
