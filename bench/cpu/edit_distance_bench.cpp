/* Single-thread timing of the edit distance kernels (cpp/metric/edit_distance.h) in ns per pair, against
   the textbook two-row DP. Not part of the CMake build. From the repository root (the kernel file has
   no dependencies, so it is compiled in, with the library's Release flags):

     g++ -O3 -DNDEBUG -std=c++17 -I. bench/cpu/edit_distance_bench.cpp cpp/metric/edit_distance.cpp \
         -o /tmp/edit_distance_bench
     /tmp/edit_distance_bench                          # synthetic words
     /tmp/edit_distance_bench /usr/share/dict/spanish  # a word list, one a line (Debian wspanish)

   Each number is the median of kSamples samples of about kSampleSeconds each (bench/cpu/timing.h);
   check `uptime` first. Three settings: words (a range search's inner loop: one query pattern against
   every word of the list; lengths 3..20, letters drawn with Spanish frequencies unless a list is
   given), 64-byte and 500-byte strings (pairs over 16 letters, the second a copy of the first with
   random edits, so the distance is small, as near neighbours are). Columns: edit_distance (two
   strings, nothing prepared), EditPattern::distance (pattern prepared once), distance_within at a
   bound (what range search calls), and the DP baseline. */
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu/timing.h"
#include "cpp/metric/edit_distance.h"

namespace {

using Bytes = std::vector<uint8_t>;

int64_t textbook(const Bytes& a, const Bytes& b, std::vector<int64_t>& row) {
  row.resize(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({up + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::vector<Bytes> synthetic_words(int n, std::mt19937& gen) {
  // Spanish letter frequencies (per mille, rounded); vowels dominate, so words share many letters.
  const std::string letters = "eaosrnidlctumpbgvyqhfzjxkw";
  const std::vector<double> weight = {137, 125, 87, 80, 69, 67, 63, 50, 50, 47, 46, 39, 32, 25, 14,
                                      10, 9, 9, 9, 7, 7, 5, 4, 2, 1, 1};
  std::discrete_distribution<int> letter(weight.begin(), weight.end());
  std::uniform_int_distribution<int> length(3, 20);
  std::vector<Bytes> words(static_cast<size_t>(n));
  for (auto& w : words) {
    w.resize(static_cast<size_t>(std::min(length(gen), length(gen))));  // skewed short, mean ~8.7
    for (auto& c : w) c = static_cast<uint8_t>(letters[letter(gen)]);
  }
  return words;
}

Bytes random_edits(Bytes s, int edits, std::mt19937& gen) {
  for (int e = 0; e < edits; ++e) {
    const size_t at = gen() % (s.size() + 1);
    const uint8_t c = static_cast<uint8_t>('a' + gen() % 16);
    switch (gen() % 3) {
      case 0: s.insert(s.begin() + at, c); break;
      case 1: if (at < s.size()) s.erase(s.begin() + at); break;
      default: if (at < s.size()) s[at] = c;
    }
  }
  return s;
}

void report(const char* setting, double mean_length, const std::vector<std::pair<const char*, double>>& ns) {
  std::printf("%-22s (mean %5.1f bytes)", setting, mean_length);
  const double baseline = ns.back().second;
  for (const auto& [name, t] : ns) std::printf("  %s %8.1f ns (x%.1f)", name, t, baseline / t);
  std::printf("\n");
}

// One query against every word, as a range search does.
void bench_words(const std::vector<Bytes>& words) {
  double mean = 0;
  for (const auto& w : words) mean += static_cast<double>(w.size()) / static_cast<double>(words.size());
  const Bytes& query = words[words.size() / 2];
  const quiver::EditPattern pattern(query.data(), static_cast<int64_t>(query.size()));
  const double per = 1e9 / static_cast<double>(words.size());
  std::vector<int64_t> row;
  int64_t sink = 0;
  auto over_all = [&](auto&& f) {
    return bench::time_call([&] {
      for (const auto& w : words) sink += f(w);
    }) * per;
  };
  std::vector<std::pair<const char*, double>> ns;
  ns.push_back({"edit_distance", over_all([&](const Bytes& w) {
                  return quiver::edit_distance(query.data(), static_cast<int64_t>(query.size()), w.data(),
                                               static_cast<int64_t>(w.size()));
                })});
  ns.push_back({"distance", over_all([&](const Bytes& w) {
                  return pattern.distance(w.data(), static_cast<int64_t>(w.size()));
                })});
  for (int64_t bound : {1, 2, 3}) {
    static const char* names[] = {"", "within 1", "within 2", "within 3"};
    ns.push_back({names[bound], over_all([&](const Bytes& w) {
                    return pattern.distance_within(w.data(), static_cast<int64_t>(w.size()), bound);
                  })});
  }
  ns.push_back({"textbook DP", over_all([&](const Bytes& w) { return textbook(query, w, row); })});
  report("words, 1 x all", mean, ns);
  if (sink == 42) std::printf(" ");  // keeps the results alive
}

// Pairs (a_i, b_i), b_i a few random edits from a_i.
void bench_pairs(int64_t length, int edits, int64_t bound, std::mt19937& gen) {
  const int pairs = 64;
  std::vector<Bytes> a(pairs), b(pairs);
  for (int p = 0; p < pairs; ++p) {
    a[p].resize(static_cast<size_t>(length));
    for (auto& c : a[p]) c = static_cast<uint8_t>('a' + gen() % 16);
    b[p] = random_edits(a[p], edits, gen);
  }
  std::vector<quiver::EditPattern> patterns;
  for (const auto& s : a) patterns.emplace_back(s.data(), static_cast<int64_t>(s.size()));
  std::vector<int64_t> row;
  int64_t sink = 0;
  auto over_pairs = [&](auto&& f) {
    return bench::time_call([&] {
      for (int p = 0; p < pairs; ++p) sink += f(p);
    }) * 1e9 / pairs;
  };
  char within[32];
  std::snprintf(within, sizeof within, "within %lld", static_cast<long long>(bound));
  std::vector<std::pair<const char*, double>> ns;
  ns.push_back({"edit_distance", over_pairs([&](int p) {
                  return quiver::edit_distance(a[p].data(), length, b[p].data(), static_cast<int64_t>(b[p].size()));
                })});
  ns.push_back({"distance", over_pairs([&](int p) {
                  return patterns[p].distance(b[p].data(), static_cast<int64_t>(b[p].size()));
                })});
  ns.push_back({within, over_pairs([&](int p) {
                  return patterns[p].distance_within(b[p].data(), static_cast<int64_t>(b[p].size()), bound);
                })});
  ns.push_back({"textbook DP", over_pairs([&](int p) { return textbook(a[p], b[p], row); })});
  char setting[64];
  std::snprintf(setting, sizeof setting, "%lld bytes, %d edits", static_cast<long long>(length), edits);
  report(setting, static_cast<double>(length), ns);
  if (sink == 42) std::printf(" ");
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("machine: %s; load average before: %s\n", bench::cpu_model().c_str(),
              bench::load_average().c_str());
  std::printf("command:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\nbaseline: the textbook two-row DP, one thread; x = speed-up over it\n");
  std::mt19937 gen(7);
  std::vector<Bytes> words;
  if (argc > 1) {
    std::ifstream in(argv[1]);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) words.emplace_back(line.begin(), line.end());
  } else {
    words = synthetic_words(50000, gen);
  }
  if (words.empty()) {
    std::fprintf(stderr, "no words in %s\n", argv[1]);
    return 1;
  }
  bench_words(words);
  bench_pairs(64, 4, 5, gen);
  bench_pairs(500, 20, 10, gen);
  std::printf("load average after: %s\n", bench::load_average().c_str());
  return 0;
}
