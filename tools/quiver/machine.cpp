#include "machine.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace qvtool {

// The value after "key<spaces>:" on the first line of the file that starts with key.
static std::string field(const std::string &path, const std::string &key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string cpu_model() {
  std::string m = field("/proc/cpuinfo", "model name");
  return m.empty() ? "unknown CPU" : m;
}

int cpu_cores() { return std::max(1u, std::thread::hardware_concurrency()); }

double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return in ? load : 0.0;
}

std::string gpu_model(int ordinal) {
  // One folder per GPU, named by PCI address; CUDA's default order is by PCI address too when the
  // GPUs are of one model, which is the case on the machines we measure on.
  std::vector<std::string> dirs;
  std::error_code ec;
  for (auto &e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec))
    dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  if (ordinal < 0 || size_t(ordinal) >= dirs.size()) return "unknown GPU";
  std::string m = field(dirs[size_t(ordinal)] + "/information", "Model");
  return m.empty() ? "unknown GPU" : m;
}

std::string gpu_models(const std::vector<int32_t> &ordinals) {
  std::vector<int32_t> gpus;  // distinct GPUs, first appearance first
  for (int32_t id : ordinals)
    if (std::find(gpus.begin(), gpus.end(), id) == gpus.end()) gpus.push_back(id);
  std::vector<std::string> models;
  for (int32_t id : gpus) models.push_back(gpu_model(id));
  if (models.empty()) return "";
  if (std::all_of(models.begin(), models.end(), [&](const std::string &m) { return m == models[0]; }))
    return models.size() == 1 ? models[0] : std::to_string(models.size()) + " x " + models[0];
  std::string out;
  for (size_t i = 0; i < models.size(); ++i) out += (i ? ", " : "") + models[i];
  return out;
}

std::string command_line(int argc, char **argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool plain = !a.empty() && a.find_first_of(" \t\"'$\\,;()*?") == std::string::npos;
    if (i) out += ' ';
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace qvtool
