// IvfIds (cpp/index/ivf_ids.h): runs of consecutive ids, removed slots reused, ids in gaps and list
// numbers past int32 in the map, checked against a std::map after every step; loading gives the
// same table; duplicates and negative ids on load are corrupt data.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "cpp/core/error.h"
#include "cpp/index/ivf_ids.h"

namespace quiver {
namespace {

void expect_same(const IvfIds& ids, const std::map<int64_t, int64_t>& reference, int64_t probe_to) {
  ASSERT_EQ(ids.size(), static_cast<int64_t>(reference.size()));
  for (int64_t id = -2; id < probe_to; ++id) {
    const auto it = reference.find(id);
    ASSERT_EQ(ids.list_of(id), it == reference.end() ? -1 : it->second) << "id " << id;
  }
}

// Adds n ids (nullptr: assigned ones) with lists drawn from `rng`, to both tables.
void add(IvfIds& ids, std::map<int64_t, int64_t>& reference, int64_t n, const int64_t* given, std::mt19937& rng) {
  std::vector<int64_t> assigned;
  const int64_t* added = ids.check_new(n, given, assigned);
  std::vector<int64_t> lists(static_cast<size_t>(n));
  for (auto& l : lists) l = rng() % 4 == 0 ? int64_t{1} << 33 : rng() % 50;  // some lists past int32
  ids.insert(n, added, lists.data());
  for (int64_t i = 0; i < n; ++i) reference[added[i]] = lists[i];
}

TEST(IvfIds, AgreesWithAMapThroughAddsRemovalsAndReload) {
  std::mt19937 rng(5);
  IvfIds ids;
  std::map<int64_t, int64_t> reference;
  add(ids, reference, 37, nullptr, rng);  // 0..36: one run
  const std::vector<int64_t> far{100, 101, 102, 90, 95, 40};  // a new run, then ids in the gap
  add(ids, reference, int64_t(far.size()), far.data(), rng);
  expect_same(ids, reference, 120);
  add(ids, reference, 5, nullptr, rng);  // 103..107 extend the last run
  expect_same(ids, reference, 120);

  // Remove a mix (the largest id too), then assigned ids continue after the largest left.
  std::vector<std::pair<int64_t, int64_t>> gone;
  for (int64_t id : {0, 7, 36, 90, 101, 106, 107})
    gone.push_back({reference[id], id});
  const std::vector<int64_t> asked{0, 7, 36, 90, 101, 106, 107, 7, 555};
  EXPECT_EQ(ids.present(int64_t(asked.size()), asked.data()).size(), gone.size());
  ids.erase(ids.present(int64_t(asked.size()), asked.data()));
  for (const auto& g : gone) reference.erase(g.second);
  expect_same(ids, reference, 120);
  std::vector<int64_t> assigned;
  EXPECT_EQ(*ids.check_new(1, nullptr, assigned), 106);
  add(ids, reference, 3, nullptr, rng);  // 106, 107 reuse removed slots, 108 extends
  const std::vector<int64_t> back{7, 101};  // removed slots inside runs, given again
  add(ids, reference, 2, back.data(), rng);
  expect_same(ids, reference, 120);

  // Duplicates and present ids are refused.
  const std::vector<int64_t> twice{200, 200}, present{101};
  EXPECT_THROW(ids.check_new(2, twice.data(), assigned), Error);
  EXPECT_THROW(ids.check_new(1, present.data(), assigned), Error);

  // Loading the same (id, list) pairs in list order rebuilds an equal table.
  std::map<int64_t, std::vector<int64_t>> by_list;
  for (const auto& [id, list] : reference) by_list[list].push_back(id);
  IvfIds loaded;
  for (const auto& [list, members] : by_list) loaded.assign_list(list, int64_t(members.size()), members.data());
  loaded.finish_loading();
  expect_same(loaded, reference, 120);
  EXPECT_EQ(*loaded.check_new(1, nullptr, assigned), reference.rbegin()->first + 1);

  // Removing everything empties the table; ids start again from 0.
  std::vector<int64_t> all;
  for (const auto& entry : reference) all.push_back(entry.first);
  loaded.erase(loaded.present(int64_t(all.size()), all.data()));
  EXPECT_EQ(loaded.size(), 0);
  EXPECT_EQ(*loaded.check_new(1, nullptr, assigned), 0);
}

TEST(IvfIds, RandomOperationsAgreeWithAMap) {
  std::mt19937 rng(11);
  IvfIds ids;
  std::map<int64_t, int64_t> reference;
  for (int step = 0; step < 300; ++step) {
    const int what = int(rng() % 3);
    if (what == 0) {
      add(ids, reference, 1 + rng() % 20, nullptr, rng);
    } else if (what == 1) {
      std::vector<int64_t> given;
      for (int i = 0; i < 5; ++i) {
        const int64_t id = rng() % 700;
        if (!reference.count(id) && std::find(given.begin(), given.end(), id) == given.end()) given.push_back(id);
      }
      add(ids, reference, int64_t(given.size()), given.data(), rng);
    } else {
      std::vector<int64_t> asked;
      for (int i = 0; i < 8; ++i) asked.push_back(rng() % 700);
      const auto found = ids.present(int64_t(asked.size()), asked.data());
      for (const auto& f : found) reference.erase(f.second);
      ids.erase(found);
    }
    expect_same(ids, reference, 720);
  }
}

TEST(IvfIds, LoadRefusesDuplicatesAndNegativeIds) {
  IvfIds ids;
  const std::vector<int64_t> a{3, 4, 5}, b{9, 4};
  ids.assign_list(0, 3, a.data());
  ids.assign_list(1, 2, b.data());
  try {
    ids.finish_loading();
    FAIL() << "a duplicate id loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::corrupt_data);
  }
  IvfIds other;
  const std::vector<int64_t> negative{1, -3};
  EXPECT_THROW(other.assign_list(0, 2, negative.data()), Error);
}

}  // namespace
}  // namespace quiver
