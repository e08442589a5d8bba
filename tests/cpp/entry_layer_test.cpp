// graph/entry_layer.h: the sample graph a CPU walk over a large graph index starts from.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cpp/core/context.h"
#include "cpp/graph/entry_layer.h"
#include "cpp/graph/graph_build.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

constexpr int64_t kDim = 12;
constexpr int64_t kRows = 4 * kEntryLayerRows + 17;  // the smallest layered size, not a round number

TEST(EntryLayer, SmallGraphsHaveNone) {
  Context context(testing::cpu_options());
  const auto x = testing::clustered_vectors(4 * kEntryLayerRows - 1, kDim, 20, 1);
  const int32_t entries[] = {0};
  EXPECT_TRUE(build_entry_layer(context, Metric::l2, x.data(), 4 * kEntryLayerRows - 1, kDim, entries, 1).empty());
}

TEST(EntryLayer, SamplesTheEntriesFirstAndLinksTheirOwnGraph) {
  Context context(testing::cpu_options());
  const auto x = testing::clustered_vectors(kRows, kDim, 50, 2);
  const int32_t entries[] = {17, 5, 17, 9000};  // a repeat is taken once
  const KeyFn key = search_key(Metric::l2);
  const EntryLayer layer = build_entry_layer(context, Metric::l2, x.data(), kRows, kDim, entries, 4);
  ASSERT_EQ(static_cast<int64_t>(layer.rows.size()), kEntryLayerRows);
  // The layer's walks start from its own graph's entries (build_graph's: the sample's medoid, then
  // rows spread farthest-first), distinct sample rows.
  EXPECT_EQ(static_cast<int64_t>(layer.starts.size()), GraphBuildParams().entry_points);
  EXPECT_EQ(std::set<int32_t>(layer.starts.begin(), layer.starts.end()).size(), layer.starts.size());
  for (int32_t start : layer.starts) EXPECT_TRUE(start >= 0 && start < kEntryLayerRows) << start;
  EXPECT_EQ(std::vector<int32_t>(layer.rows.begin(), layer.rows.begin() + 3), (std::vector<int32_t>{17, 5, 9000}));
  EXPECT_EQ(std::set<int32_t>(layer.rows.begin(), layer.rows.end()).size(), layer.rows.size());
  for (size_t i = 0; i < layer.rows.size(); ++i)
    ASSERT_TRUE(std::equal(x.begin() + layer.rows[i] * kDim, x.begin() + (layer.rows[i] + 1) * kDim,
                           layer.vectors.begin() + static_cast<int64_t>(i) * kDim));
  // Every row links distinct other sample rows, its nearest one first: pruning never drops the
  // closest candidate.
  const int64_t s = static_cast<int64_t>(layer.rows.size());
  for (int64_t i = 0; i < s; i += 101) {
    int64_t nearest = -1;
    float best = 0;
    for (int64_t j = 0; j < s; ++j) {
      const float d = key(layer.vectors.data() + i * kDim, layer.vectors.data() + j * kDim, kDim);
      if (j != i && (nearest < 0 || d < best)) nearest = j, best = d;
    }
    EXPECT_EQ(layer.graph.row(i)[0], nearest) << "row " << i;
    std::set<int32_t> links;
    for (int32_t d = 0; d < kEntryLayerDegree && layer.graph.row(i)[d] != kEmptySlot; ++d) {
      const int32_t j = layer.graph.row(i)[d];
      ASSERT_NE(j, i);
      ASSERT_TRUE(j >= 0 && j < s);
      EXPECT_TRUE(links.insert(j).second) << "row " << i << " link " << d << " repeats " << j;
    }
  }
}

TEST(EntryLayer, WalksStartNearTheQuery) {
  Context context(testing::cpu_options());
  const auto x = testing::clustered_vectors(kRows, kDim, 50, 3);
  const int32_t entries[] = {0};
  const KeyFn key = search_key(Metric::l2);
  const EntryLayer layer = build_entry_layer(context, Metric::l2, x.data(), kRows, kDim, entries, 1);
  BeamScratch scratch;
  std::vector<Neighbour> found;
  std::vector<int32_t> starts;
  // A query on a sampled row starts there, from one entry point whatever the row's cluster.
  for (int64_t i = 7; i < static_cast<int64_t>(layer.rows.size()); i += 37) {
    entry_rows(layer, kDim, key, layer.vectors.data() + i * kDim, scratch, found, starts);
    ASSERT_EQ(static_cast<int64_t>(starts.size()), kEntryLayerStarts);
    EXPECT_EQ(starts.front(), layer.rows[i]) << "sample row " << i;
  }
}

}  // namespace
}  // namespace quiver
