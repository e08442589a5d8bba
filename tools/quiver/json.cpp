#include "json.h"

#include <cmath>
#include <cstdio>

namespace qvtool {

std::string json_quote(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

void JsonObject::key(const std::string &k) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(k) + ": ";
}

JsonObject &JsonObject::add(const std::string &k, const std::string &value) {
  key(k);
  body_ += json_quote(value);
  return *this;
}

JsonObject &JsonObject::add(const std::string &k, double value) {
  key(k);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", value);
    body_ += buf;
  }
  return *this;
}

JsonObject &JsonObject::add(const std::string &k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonObject &JsonObject::add(const std::string &k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject &JsonObject::add(const std::string &k, const JsonObject &value) {
  key(k);
  body_ += value.str();
  return *this;
}

JsonObject &JsonObject::add_null(const std::string &k) {
  key(k);
  body_ += "null";
  return *this;
}

}  // namespace qvtool
