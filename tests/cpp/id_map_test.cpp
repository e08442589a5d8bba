#include <gtest/gtest.h>

#include "cpp/core/error.h"
#include "cpp/index/id_map.h"

namespace quiver {
namespace {

TEST(IdMap, AssignsConsecutiveIdsAfterTheLargest) {
  IdMap map;
  std::vector<int64_t> assigned;
  const int64_t explicit_ids[] = {10, 3};
  map.append(2, map.check_new(2, explicit_ids, assigned));
  const int64_t* next = map.check_new(2, nullptr, assigned);
  EXPECT_EQ(next[0], 11);
  EXPECT_EQ(next[1], 12);
}

TEST(IdMap, RejectsNegativeDuplicateAndPresentIds) {
  IdMap map;
  std::vector<int64_t> assigned;
  const int64_t first[] = {5};
  map.append(1, map.check_new(1, first, assigned));
  const int64_t negative[] = {-2};
  const int64_t twice[] = {7, 7};
  const int64_t present[] = {5};
  EXPECT_THROW(map.check_new(1, negative, assigned), Error);
  EXPECT_THROW(map.check_new(2, twice, assigned), Error);
  EXPECT_THROW(map.check_new(1, present, assigned), Error);
}

TEST(IdMap, RemovesRowsAndRenumbers) {
  IdMap map;
  std::vector<int64_t> assigned;
  map.append(5, map.check_new(5, nullptr, assigned));
  const int64_t gone[] = {1, 3, 99};
  const auto rows = map.rows_of(3, gone);
  EXPECT_EQ(rows, (std::vector<int64_t>{1, 3}));
  IdMap kept = map.without_rows(rows);
  EXPECT_EQ(kept.ids(), (std::vector<int64_t>{0, 2, 4}));
  const int64_t two[] = {2};
  EXPECT_EQ(kept.rows_of(1, two), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace quiver
