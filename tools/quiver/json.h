// Builds one JSON object on a single line (the benchmark output is JSON Lines).
#pragma once

#include <cstdint>
#include <string>

namespace qvtool {

class JsonObject {
 public:
  JsonObject &add(const std::string &key, const std::string &value);
  JsonObject &add(const std::string &key, const char *value) { return add(key, std::string(value)); }
  JsonObject &add(const std::string &key, double value);  // NaN / Inf become null
  JsonObject &add(const std::string &key, int64_t value);
  JsonObject &add(const std::string &key, int value) { return add(key, int64_t(value)); }
  JsonObject &add(const std::string &key, bool value);  // true / false
  JsonObject &add(const std::string &key, const JsonObject &value);
  JsonObject &add_null(const std::string &key);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string &k);
  std::string body_;
};

std::string json_quote(const std::string &s);

}  // namespace qvtool
