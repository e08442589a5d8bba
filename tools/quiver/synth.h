// The synthetic data recipe of BENCHMARKS.md: clustered points of low intrinsic dimension.
//   m = min(d, 24); 1024 centres ~ N(0, 4 I_m); cluster j picked with probability ∝ 1/sqrt(j+1);
//   z = centre + N(0, I_m); x = A z + 0.05 N(0, I_d), A a fixed d x m matrix of N(0, 1/m) entries.
// Streams: the model (centres, then A row by row) uses derive_seed(seed, 0); base points
// derive_seed(seed, 1); queries derive_seed(seed, 2). Points are made in blocks of kSynthBlock rows,
// block b of a stream seeded with derive_seed(stream_seed, b), so threads change nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "matrix.h"

namespace qvtool {

constexpr int64_t kSynthBlock = 4096;

struct SynthSpec {
  std::string name;
  int64_t n = 0, d = 0, nq = 10000;
  uint64_t seed = 1;
};

// The standard sizes: synth-100k-128, synth-1m-128, synth-10m-96. nullopt for any other name.
std::optional<SynthSpec> synth_spec_by_name(const std::string &name);

// Base (which = 1) or query (which = 2) points of the recipe.
enum class SynthPart { Base = 1, Queries = 2 };
FloatMatrix synth_generate(const SynthSpec &spec, SynthPart part);

}  // namespace qvtool
