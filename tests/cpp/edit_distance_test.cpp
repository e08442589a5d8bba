// The bit-parallel edit distance (metric/edit_distance.h) against the textbook O(n*m) DP: lengths
// around the 64-bit word boundaries, alphabets from 2 symbols (many matches) to all 256 byte values,
// near-identical strings (small distances, where the bound stops early and bands the blocks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpp/metric/edit_distance.h"

namespace quiver {
namespace {

using Bytes = std::vector<uint8_t>;

const int64_t kAwkwardLengths[] = {0, 1, 63, 64, 65, 127, 128, 129, 200, 1000};

int64_t reference_distance(const Bytes& a, const Bytes& b) {
  std::vector<int64_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j)
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// Bytes lowest .. lowest + alphabet - 1.
Bytes random_bytes(int64_t length, int alphabet, std::mt19937& gen, int lowest = 0) {
  std::uniform_int_distribution<int> symbol(lowest, lowest + alphabet - 1);
  Bytes s(static_cast<size_t>(length));
  for (auto& c : s) c = static_cast<uint8_t>(symbol(gen));
  return s;
}

// `edits` random insertions, deletions and substitutions.
Bytes edited(Bytes s, int edits, int alphabet, std::mt19937& gen) {
  for (int e = 0; e < edits; ++e) {
    const size_t at = gen() % (s.size() + 1);
    const uint8_t c = static_cast<uint8_t>(gen() % alphabet);
    const int kind = static_cast<int>(gen() % 3);
    if (kind == 0) s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
    else if (at < s.size() && kind == 1) s.erase(s.begin() + static_cast<std::ptrdiff_t>(at));
    else if (at < s.size()) s[at] = c;
  }
  return s;
}

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

int64_t distance(const Bytes& a, const Bytes& b) {
  return edit_distance(a.data(), static_cast<int64_t>(a.size()), b.data(), static_cast<int64_t>(b.size()));
}

// Every entry point agrees with the DP: the free function both ways round, a pattern of either
// string, and distance_within at every bound 0 .. d + 2 (exact when d <= bound, else above it).
void expect_all_agree(const Bytes& a, const Bytes& b, const std::string& what) {
  const int64_t want = reference_distance(a, b);
  const int64_t na = static_cast<int64_t>(a.size()), nb = static_cast<int64_t>(b.size());
  EXPECT_EQ(distance(a, b), want) << what;
  EXPECT_EQ(distance(b, a), want) << what << " (swapped)";
  const EditPattern pa(a.data(), na), pb(b.data(), nb);
  EXPECT_EQ(pa.length(), na);
  EXPECT_EQ(pa.distance(b.data(), nb), want) << what << " (pattern a)";
  EXPECT_EQ(pb.distance(a.data(), na), want) << what << " (pattern b)";
  for (int64_t bound = 0; bound <= want + 2; ++bound) {
    for (const auto* p : {&pa, &pb}) {
      const Bytes& text = p == &pa ? b : a;
      const int64_t got = p->distance_within(text.data(), static_cast<int64_t>(text.size()), bound);
      if (want <= bound) {
        ASSERT_EQ(got, want) << what << ", bound " << bound << (p == &pa ? " (pattern a)" : " (pattern b)");
      } else {
        ASSERT_GT(got, bound) << what << ", distance " << want << (p == &pa ? " (pattern a)" : " (pattern b)");
      }
    }
  }
}

TEST(EditDistance, KnownPairs) {
  EXPECT_EQ(distance(bytes_of("kitten"), bytes_of("sitting")), 3);
  EXPECT_EQ(distance(bytes_of("flaw"), bytes_of("lawn")), 2);
  EXPECT_EQ(distance(bytes_of("casa"), bytes_of("cosas")), 2);
  EXPECT_EQ(distance(bytes_of("abc"), bytes_of("")), 3);
  EXPECT_EQ(distance(bytes_of(""), bytes_of("")), 0);
  // Bytes, not characters: "ñ" is two bytes in UTF-8, both replaced or removed.
  EXPECT_EQ(distance(bytes_of("a\xc3\xb1o"), bytes_of("ano")), 2);
  EXPECT_EQ(distance(bytes_of("a\xc3\xb1o"), bytes_of("ao")), 2);
}

TEST(EditDistance, RandomStringsOfAwkwardLengths) {
  std::mt19937 gen(1);
  for (int alphabet : {2, 4, 256})
    for (int64_t na : kAwkwardLengths)
      for (int64_t nb : kAwkwardLengths) {
        const Bytes a = random_bytes(na, alphabet, gen), b = random_bytes(nb, alphabet, gen);
        expect_all_agree(a, b, "lengths " + std::to_string(na) + ", " + std::to_string(nb) + ", alphabet " +
                                   std::to_string(alphabet));
      }
}

TEST(EditDistance, NearIdenticalStrings) {
  std::mt19937 gen(2);
  for (int alphabet : {2, 4, 256})
    for (int64_t length : kAwkwardLengths)
      for (int edits : {1, 2, 5, 20}) {
        const Bytes a = random_bytes(length, alphabet, gen);
        expect_all_agree(a, edited(a, edits, alphabet, gen),
                         "length " + std::to_string(length) + ", " + std::to_string(edits) + " edits, alphabet " +
                             std::to_string(alphabet));
      }
}

// Past one word the bound bands the blocks; random lengths and edit counts probe the band's edges.
TEST(EditDistance, NearIdenticalLongStrings) {
  std::mt19937 gen(6);
  for (int trial = 0; trial < 300; ++trial) {
    const int alphabet = trial % 3 == 0 ? 2 : trial % 3 == 1 ? 4 : 256;
    const Bytes a = random_bytes(65 + gen() % 300, alphabet, gen);
    expect_all_agree(a, edited(a, 1 + static_cast<int>(gen() % 12), alphabet, gen),
                     "trial " + std::to_string(trial) + ", length " + std::to_string(a.size()));
  }
}

// A distance just above the length difference, and the bound at that difference: the tracked
// diagonal then runs along the band's edge, where the blocks above it stop.
TEST(EditDistance, UnequalLongStrings) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int alphabet = trial % 2 == 0 ? 2 : 4;
    const Bytes a = random_bytes(65 + gen() % 150, alphabet, gen);
    Bytes b = a;
    for (int64_t inserted = gen() % 80; inserted > 0; --inserted)
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(gen() % (b.size() + 1)), static_cast<uint8_t>(gen() % alphabet));
    b = edited(b, 1 + static_cast<int>(gen() % 2), alphabet, gen);
    expect_all_agree(a, b, "trial " + std::to_string(trial) + ", lengths " + std::to_string(a.size()) + ", " +
                               std::to_string(b.size()));
  }
}

TEST(EditDistance, IdenticalAndEmptyStrings) {
  std::mt19937 gen(3);
  for (int64_t length : kAwkwardLengths) {
    const Bytes s = random_bytes(length, 256, gen);
    const EditPattern p(s.data(), length);
    EXPECT_EQ(distance(s, s), 0) << length;
    EXPECT_EQ(p.distance(s.data(), length), 0) << length;
    EXPECT_EQ(p.distance_within(s.data(), length, 0), 0) << length;
    // Empty against nonempty: the length, or above the bound without looking at the bytes.
    const EditPattern empty(nullptr, 0);
    EXPECT_EQ(empty.distance(s.data(), length), length);
    EXPECT_EQ(p.distance(nullptr, 0), length);
    EXPECT_EQ(edit_distance(nullptr, 0, s.data(), length), length);
    if (length > 0) {
      EXPECT_GT(p.distance_within(nullptr, 0, length - 1), length - 1);
    }
  }
}

TEST(EditDistance, HighBytes) {
  std::mt19937 gen(4);
  for (int64_t length : {5, 64, 65, 300}) {
    // Only values 128..255, and a mix where 0 and 255 stand beside each other.
    const Bytes a = random_bytes(length, 128, gen, 128);
    expect_all_agree(a, edited(a, 3, 256, gen), "high bytes, length " + std::to_string(length));
    Bytes b = random_bytes(length, 2, gen);
    for (auto& c : b) c = c ? 255 : 0;
    expect_all_agree(b, edited(b, 4, 2, gen), "0 and 255, length " + std::to_string(length));
  }
}

// One prepared pattern against many texts, as a range search uses it.
TEST(EditDistance, PatternServesManyTexts) {
  std::mt19937 gen(5);
  const Bytes query = random_bytes(9, 6, gen, 'a');
  const EditPattern pattern(query.data(), static_cast<int64_t>(query.size()));
  for (int t = 0; t < 2000; ++t) {
    const Bytes word = random_bytes(3 + gen() % 18, 6, gen, 'a');
    const int64_t want = reference_distance(query, word);
    ASSERT_EQ(pattern.distance(word.data(), static_cast<int64_t>(word.size())), want);
    for (int64_t bound : {0, 1, 2, 3}) {
      const int64_t got = pattern.distance_within(word.data(), static_cast<int64_t>(word.size()), bound);
      if (want <= bound) {
        ASSERT_EQ(got, want);
      } else {
        ASSERT_GT(got, bound);
      }
    }
  }
}

}  // namespace
}  // namespace quiver
