// What a benchmark must print beside its numbers: the machine, the command, the library version.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qvtool {

std::string cpu_model();     // "model name" of /proc/cpuinfo, or "unknown CPU"
int cpu_cores();             // logical CPUs the process may use
double load_average();       // 1-minute load average (/proc/loadavg), 0 when unknown
// Model of the CUDA device with this ordinal from the NVIDIA driver's /proc files, or "unknown GPU".
std::string gpu_model(int ordinal);
// The models of a context's CUDA devices (ordinals in order, repeats allowed): "NVIDIA H100 80GB HBM3",
// "4 x NVIDIA H100 80GB HBM3" for four distinct GPUs of one model, else the distinct models joined by ", ".
std::string gpu_models(const std::vector<int32_t> &ordinals);
// argv joined with spaces, quoting arguments that need it, so the line can be pasted back.
std::string command_line(int argc, char **argv);

}  // namespace qvtool
