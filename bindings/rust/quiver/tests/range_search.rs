//! Range search: CSR results, radii in the metric's units, filters.

mod common;

use common::{close, context, data, l2};
use quiver::{Index, Metric, SearchParams};

const DIM: usize = 8;

#[test]
fn range_search_returns_every_vector_within_the_radius() {
    let ctx = context();
    let base = data(400, DIM, 41);
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
    index.add(&base).unwrap();
    let queries = data(7, DIM, 42);
    let radius = 0.35; // squared L2
    let result = index
        .range_search(&queries, radius, &SearchParams::default())
        .unwrap();
    assert_eq!(result.nq(), 7);
    assert_eq!(result.lims().len(), 8);
    assert_eq!(result.lims()[0], 0);
    assert_eq!(result.lims()[7] as usize, result.len());
    assert_eq!(result.ids().len(), result.len());
    assert_eq!(result.distances().len(), result.len());
    assert!(
        !result.is_empty(),
        "the radius is large enough for some hits"
    );
    for (q, hits) in result.iter().enumerate() {
        let query = &queries[q * DIM..(q + 1) * DIM];
        let mut expected: Vec<i64> = (0..400)
            .filter(|&r| l2(&base[r * DIM..(r + 1) * DIM], query) <= radius)
            .map(|r| r as i64)
            .collect();
        let mut got = hits.ids.to_vec();
        // Vectors right at the radius may fall either way by rounding; compare the clear ones.
        let borderline = |id: &i64| {
            let d = l2(&base[*id as usize * DIM..(*id as usize + 1) * DIM], query);
            (d - radius).abs() < 1e-4
        };
        expected.retain(|id| !borderline(id));
        got.retain(|id| !borderline(id));
        got.sort();
        assert_eq!(got, expected, "query {q}");
        assert!(
            hits.distances.windows(2).all(|w| w[0] <= w[1]),
            "closest first"
        );
        for (id, d) in hits.iter() {
            assert!(close(
                d,
                l2(&base[id as usize * DIM..(id as usize + 1) * DIM], query)
            ));
        }
    }
    assert!(result.get(7).is_none());
    let per_query: usize = result.iter().map(|h| h.len()).sum();
    assert_eq!(per_query, result.len());
}

#[test]
fn range_search_with_inner_product_keeps_similarities_above_the_radius() {
    let ctx = context();
    let base = data(300, DIM, 43);
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::InnerProduct).unwrap();
    index.add(&base).unwrap();
    let queries = data(3, DIM, 44);
    let result = index
        .range_search(&queries, 2.5, &SearchParams::default())
        .unwrap();
    for hits in result.iter() {
        assert!(hits.distances.iter().all(|&s| s >= 2.5 - 1e-4));
        assert!(
            hits.distances.windows(2).all(|w| w[0] >= w[1]),
            "largest first"
        );
    }
}

#[test]
fn range_search_applies_the_filter_and_handles_no_hits() {
    let ctx = context();
    let base = data(100, DIM, 45);
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
    index.add(&base).unwrap();
    let params = SearchParams::default().with_allowed_ids(&[1, 2, 3]);
    let result = index
        .range_search(&base[..4 * DIM], 100.0, &params)
        .unwrap();
    for hits in result.iter() {
        let mut ids = hits.ids.to_vec();
        ids.sort();
        assert_eq!(ids, vec![1, 2, 3]);
    }
    let none = index
        .range_search(&base[..2 * DIM], -1.0, &SearchParams::default())
        .unwrap();
    assert!(none.is_empty());
    assert_eq!(none.lims(), &[0, 0, 0]);
    assert!(none.iter().all(|h| h.is_empty()));
    let empty = index
        .range_search(&[], 1.0, &SearchParams::default())
        .unwrap();
    assert_eq!((empty.nq(), empty.len()), (0, 0));
    assert_eq!(empty.lims(), &[0]);
}
