#include "synth.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "progress.h"
#include "rng.h"

// Keep a*b+c as two roundings everywhere: a fused multiply-add on some targets would change the data.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace qvtool {
namespace {

constexpr int64_t kCentres = 1024;
constexpr int64_t kMaxLatent = 24;
constexpr double kCentreStd = 2.0;   // N(0, 4 I_m)
constexpr double kNoiseStd = 0.05;   // ambient noise added after the projection

struct Model {
  int64_t d = 0, m = 0;
  std::vector<double> centres;  // kCentres x m
  std::vector<double> a;        // d x m
  std::vector<double> cumulative;  // cumulative cluster weights 1/sqrt(j+1)
};

Model make_model(const SynthSpec &spec) {
  Model mo;
  mo.d = spec.d;
  mo.m = std::min(spec.d, kMaxLatent);
  Rng rng(derive_seed(spec.seed, 0));
  mo.centres.resize(size_t(kCentres * mo.m));
  for (auto &c : mo.centres) c = kCentreStd * rng.gaussian();
  mo.a.resize(size_t(mo.d * mo.m));
  const double a_std = 1.0 / std::sqrt(double(mo.m));
  for (auto &v : mo.a) v = a_std * rng.gaussian();
  double total = 0;
  for (int64_t j = 0; j < kCentres; ++j) {
    total += 1.0 / std::sqrt(double(j + 1));
    mo.cumulative.push_back(total);
  }
  return mo;
}

void make_block(const Model &mo, uint64_t seed, int64_t rows, float *out) {
  Rng rng(seed);
  std::vector<double> z(size_t(mo.m));
  for (int64_t r = 0; r < rows; ++r) {
    const double u = rng.uniform() * mo.cumulative.back();
    int64_t j = std::upper_bound(mo.cumulative.begin(), mo.cumulative.end(), u) - mo.cumulative.begin();
    j = std::min(j, kCentres - 1);
    for (int64_t t = 0; t < mo.m; ++t) z[t] = mo.centres[j * mo.m + t] + rng.gaussian();
    float *x = out + r * mo.d;
    for (int64_t i = 0; i < mo.d; ++i) {
      const double *arow = mo.a.data() + i * mo.m;
      double acc = 0;
      for (int64_t t = 0; t < mo.m; ++t) acc += arow[t] * z[t];
      x[i] = static_cast<float>(acc + kNoiseStd * rng.gaussian());
    }
  }
}

}  // namespace

std::optional<SynthSpec> synth_spec_by_name(const std::string &name) {
  SynthSpec s;
  s.name = name;
  if (name == "synth-100k-128") s.n = 100000, s.d = 128;
  else if (name == "synth-1m-128") s.n = 1000000, s.d = 128;
  else if (name == "synth-10m-96") s.n = 10000000, s.d = 96;
  else return std::nullopt;
  return s;
}

FloatMatrix synth_generate(const SynthSpec &spec, SynthPart part) {
  const Model mo = make_model(spec);
  const uint64_t stream = derive_seed(spec.seed, uint64_t(part));
  FloatMatrix x;
  x.rows = part == SynthPart::Base ? spec.n : spec.nq;
  x.cols = spec.d;
  x.data.resize(size_t(x.rows * x.cols));

  const int64_t blocks = (x.rows + kSynthBlock - 1) / kSynthBlock;
  Progress progress(part == SynthPart::Base ? "generating base" : "generating queries", x.rows);
  // Workers take blocks round-robin; each block's content depends only on its index.
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(blocks, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      for (int64_t b = w; b < blocks; b += workers) {
        const int64_t r0 = b * kSynthBlock;
        const int64_t rows = std::min(kSynthBlock, x.rows - r0);
        make_block(mo, derive_seed(stream, uint64_t(b)), rows, x.row(r0));
        if (w == 0) progress.update(std::min(x.rows, (b + 1) * kSynthBlock));
      }
    });
  }
  for (auto &t : pool) t.join();
  progress.done();
  return x;
}

}  // namespace qvtool
