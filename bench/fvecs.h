// The benchmark drivers' .fvecs reader (TEXMEX: per row an int32 dim, then dim floats): the whole
// file as one row-major array, *dim set from it. Exits with a message when the file cannot be opened.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

inline std::vector<float> read_fvecs(const std::string& path, int64_t* dim) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<float> out;
  int32_t d = 0;
  while (std::fread(&d, 4, 1, f) == 1) {
    const size_t at = out.size();
    out.resize(at + size_t(d));
    if (std::fread(out.data() + at, 4, size_t(d), f) != size_t(d)) break;
  }
  std::fclose(f);
  *dim = d;
  return out;
}
