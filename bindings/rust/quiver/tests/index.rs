//! Index: create, info, train, add, search, search_into, remove, filter, errors.

mod common;

use common::{brute_force, close, context, data};
use quiver::{ComputeMode, Index, IndexKind, Metric, SearchParams, Status};

const DIM: usize = 12;

fn flat(n: usize) -> (Index, Vec<f32>) {
    let ctx = context();
    let mut index = Index::new(&ctx, &IndexKind::Flat.descriptor(), DIM, Metric::L2).unwrap();
    let base = data(n, DIM, 7);
    index.train(&base).unwrap();
    index.add(&base).unwrap();
    (index, base)
}

#[test]
fn info_describes_the_index() {
    let ctx = context();
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::InnerProduct).unwrap();
    assert_eq!(index.dim(), DIM);
    assert_eq!(index.metric(), Metric::InnerProduct);
    let info = index.info().unwrap();
    assert_eq!(info.dim, DIM);
    assert_eq!(info.metric, Metric::InnerProduct);
    assert!(info.is_trained, "Flat needs no training");
    assert_eq!(info.count, 0);
    assert_eq!(info.descriptor, "Flat");
    assert_eq!(info.device, ctx.device().unwrap());
    index.add(&data(100, DIM, 1)).unwrap();
    let info = index.info().unwrap();
    assert_eq!(info.count, 100);
    assert!(info.host_bytes + info.device_bytes > 0);
}

#[test]
fn search_finds_the_exact_neighbours() {
    let (index, base) = flat(500);
    let queries = data(20, DIM, 99);
    let k = 10;
    let found = index.search(&queries, k, &SearchParams::default()).unwrap();
    assert_eq!((found.nq(), found.k()), (20, k));
    assert_eq!(found.ids().len(), 20 * k);
    for (q, hits) in found.iter().enumerate() {
        let expected = brute_force(
            &base,
            DIM,
            None,
            &queries[q * DIM..(q + 1) * DIM],
            k,
            |_| true,
        );
        let ids: Vec<i64> = expected.iter().map(|e| e.0).collect();
        assert_eq!(hits.ids, &ids[..], "query {q}");
        for (d, e) in hits.distances.iter().zip(&expected) {
            assert!(close(*d, e.1), "query {q}: {d} vs {}", e.1);
        }
        assert!(
            hits.distances.windows(2).all(|w| w[0] <= w[1]),
            "closest first"
        );
    }
    assert!(found.get(20).is_none());
    let (distances, ids) = found.clone().into_parts();
    assert_eq!((distances.len(), ids.len()), (20 * k, 20 * k));
}

#[test]
fn search_into_writes_the_callers_slices() {
    let (index, _) = flat(200);
    let queries = data(5, DIM, 3);
    let expected = index.search(&queries, 4, &SearchParams::default()).unwrap();
    let mut distances = vec![0f32; 20];
    let mut ids = vec![0i64; 20];
    index
        .search_into(
            &queries,
            4,
            &SearchParams::default(),
            &mut distances,
            &mut ids,
        )
        .unwrap();
    assert_eq!(ids, expected.ids());
    assert_eq!(distances, expected.distances());

    let mut short = vec![0i64; 19];
    let err = index
        .search_into(
            &queries,
            4,
            &SearchParams::default(),
            &mut distances,
            &mut short,
        )
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("ids"), "{err}");
}

#[test]
fn k_beyond_the_count_pads_rows() {
    let (index, _) = flat(3);
    let found = index
        .search(&data(1, DIM, 5), 5, &SearchParams::default())
        .unwrap();
    let hits = found.get(0).unwrap();
    assert!(hits.ids[..3].iter().all(|&id| (0..3).contains(&id)));
    assert_eq!(&hits.ids[3..], &[-1, -1]);
    assert!(hits.distances[3..].iter().all(|d| *d == f32::INFINITY));
    assert_eq!(hits.iter().count(), 3, "padding is left out");
}

#[test]
fn inner_product_and_cosine_put_the_largest_first() {
    let ctx = context();
    let base = data(300, DIM, 11);
    let queries = data(4, DIM, 12);
    for metric in [Metric::InnerProduct, Metric::Cosine] {
        let mut index = Index::new(&ctx, "Flat", DIM, metric).unwrap();
        index.add(&base).unwrap();
        let found = index.search(&queries, 5, &SearchParams::default()).unwrap();
        for (q, hits) in found.iter().enumerate() {
            let query = &queries[q * DIM..(q + 1) * DIM];
            let score = |row: usize| {
                let v = &base[row * DIM..(row + 1) * DIM];
                match metric {
                    Metric::Cosine => {
                        common::ip(v, query) / (common::ip(v, v) * common::ip(query, query)).sqrt()
                    }
                    _ => common::ip(v, query),
                }
            };
            let mut rows: Vec<usize> = (0..300).collect();
            rows.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
            let ids: Vec<i64> = rows[..5].iter().map(|&r| r as i64).collect();
            assert_eq!(hits.ids, &ids[..], "{metric:?} query {q}");
            assert!(hits.distances.windows(2).all(|w| w[0] >= w[1]));
            assert!(close(hits.distances[0], score(rows[0])));
        }
    }
}

#[test]
fn add_with_ids_keeps_the_ids_and_add_continues_after_the_largest() {
    let ctx = context();
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
    let base = data(50, DIM, 21);
    let ids: Vec<i64> = (0..50).map(|i| 1000 + 3 * i).collect();
    index.add_with_ids(&base, &ids).unwrap();
    let found = index
        .search(&base[..DIM * 2], 1, &SearchParams::default())
        .unwrap();
    assert_eq!(found.ids(), &[1000, 1003]);

    index.add(&data(2, DIM, 22)).unwrap();
    let found = index
        .search(&data(2, DIM, 22), 1, &SearchParams::default())
        .unwrap();
    assert_eq!(found.ids(), &[1148, 1149]);
    assert_eq!(index.info().unwrap().count, 52);
}

#[test]
fn add_errors_leave_the_index_unchanged() {
    let (mut index, base) = flat(10);
    // One id per row, checked in Rust.
    let err = index.add_with_ids(&base[..2 * DIM], &[100]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    // Duplicates and ids already present, checked by the library.
    let err = index
        .add_with_ids(&base[..2 * DIM], &[100, 100])
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(!err.message.is_empty());
    let err = index.add_with_ids(&base[..2 * DIM], &[200, 3]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = index.add_with_ids(&base[..DIM], &[-5]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    // Non-finite data.
    let mut bad = base[..2 * DIM].to_vec();
    bad[DIM + 1] = f32::NAN;
    let err = index.add(&bad).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(!err.message.is_empty());
    assert_eq!(index.info().unwrap().count, 10, "nothing added on error");
}

#[test]
fn shapes_are_checked_in_rust() {
    let (mut index, _) = flat(10);
    let err = index.add(&[1.0; DIM + 1]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("multiple of dim"), "{err}");
    let err = index.train(&[1.0; 5]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = index
        .search(&[0.5; DIM - 1], 1, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("queries"), "{err}");
    let err = index
        .range_search(&[0.5; DIM + 3], 1.0, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = index
        .search(&[0.5; DIM], quiver::MAX_K + 1, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("QV_MAX_K"), "{err}");
}

#[test]
fn bad_arguments_are_reported_by_the_library() {
    let ctx = context();
    for (descriptor, dim) in [
        ("NoSuchKind", 8),
        ("Flat", 0),
        ("Flat", 70000),
        ("flat", 8),
        ("", 8),
    ] {
        let err = Index::new(&ctx, descriptor, dim, Metric::L2).unwrap_err();
        assert_eq!(
            err.status,
            Status::InvalidArgument,
            "{descriptor:?} dim {dim}: {err}"
        );
        assert!(!err.message.is_empty(), "{descriptor:?} dim {dim}");
    }
    let err = Index::new(&ctx, "Fl\0at", 8, Metric::L2).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("NUL"));

    let (index, _) = flat(10);
    let err = index
        .search(&[0.5; DIM], 0, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(!err.message.is_empty());
    let mut query = vec![0.5; DIM];
    query[3] = f32::INFINITY;
    let err = index
        .search(&query, 1, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = index
        .range_search(&[0.5; DIM], f32::NAN, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);

    let mut cosine = Index::new(&ctx, "Flat", DIM, Metric::Cosine).unwrap();
    let err = cosine.add(&[0.0; DIM]).unwrap_err();
    assert_eq!(
        err.status,
        Status::InvalidArgument,
        "zero vector under cosine: {err}"
    );
}

#[test]
fn a_success_after_a_failure_reads_no_stale_message() {
    let (index, _) = flat(10);
    let err = index
        .search(&[0.5; DIM], 0, &SearchParams::default())
        .unwrap_err();
    assert!(!err.message.is_empty());
    assert!(index
        .search(&[0.5; DIM], 1, &SearchParams::default())
        .is_ok());
    let err2 = Index::new(index.context(), "Flat", 0, Metric::L2).unwrap_err();
    assert_ne!(err2.message, "");
}

#[test]
fn remove_drops_the_given_ids() {
    let (mut index, base) = flat(100);
    let removed = index.remove(&[3, 5, 5000, 7]).unwrap();
    assert_eq!(removed, 3, "ids not in the index are not counted");
    assert_eq!(index.info().unwrap().count, 97);
    let found = index
        .search(&base[3 * DIM..4 * DIM], 5, &SearchParams::default())
        .unwrap();
    assert!(!found.ids().iter().any(|&id| [3, 5, 7].contains(&id)));
    assert_eq!(index.remove(&[]).unwrap(), 0);
    assert_eq!(index.remove(&[3]).unwrap(), 0, "already removed");
}

#[test]
fn the_filter_restricts_results() {
    let (index, base) = flat(200);
    let queries = data(6, DIM, 31);
    let even = |id: i64| id % 2 == 0;
    let allowed: Vec<i64> = (0..200).filter(|&id| even(id)).collect();
    let owned = SearchParams::default().with_allowed_ids(&allowed);
    let found = index.search(&queries, 8, &owned).unwrap();
    for (q, hits) in found.iter().enumerate() {
        let expected = brute_force(&base, DIM, None, &queries[q * DIM..(q + 1) * DIM], 8, even);
        let ids: Vec<i64> = expected.iter().map(|e| e.0).collect();
        assert_eq!(hits.ids, &ids[..], "query {q}");
    }

    // A borrowed bitset: ids 0..=7 allowed, and ids at or beyond `bits` = 5 excluded.
    let bitset = [0xffu8];
    let borrowed = SearchParams::default().with_filter(&bitset[..], 5);
    let found = index.search(&queries, 10, &borrowed).unwrap();
    for hits in found.iter() {
        assert_eq!(hits.iter().count(), 5);
        assert!(hits.iter().all(|(id, _)| (0..5).contains(&id)));
        assert_eq!(&hits.ids[5..], &[-1; 5]);
    }

    // A bitset too short for its bits is refused before the call.
    let err = index
        .search(
            &queries,
            1,
            &SearchParams::default().with_filter(vec![0u8; 2], 17),
        )
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("filter"), "{err}");
    assert!(SearchParams::default()
        .with_filter(vec![1u8], 1)
        .without_filter()
        .filter()
        .is_none());
}

#[test]
fn search_params_carry_nprobe_and_search_width() {
    let params = SearchParams::new()
        .with_nprobe(7)
        .with_search_width(64)
        .with_refine_factor(3);
    assert_eq!(
        (
            params.nprobe(),
            params.search_width(),
            params.refine_factor()
        ),
        (7, 64, 3)
    );
    let defaults = SearchParams::default();
    assert_eq!(
        (
            defaults.nprobe(),
            defaults.search_width(),
            defaults.refine_factor()
        ),
        (quiver::NPROBE_DEFAULT, 0, 0)
    );
    assert!(defaults.filter().is_none());
    // Flat has no lists or graph: the settings are accepted and change nothing.
    let (index, _) = flat(50);
    let q = data(2, DIM, 8);
    assert_eq!(
        index.search(&q, 3, &params).unwrap(),
        index.search(&q, 3, &defaults).unwrap()
    );
}

#[test]
fn compute_modes_give_exact_results() {
    // On the CPU every mode is exact; on a GPU the fast modes re-rank exactly, so the distances of
    // whatever they return are exact too, and at these sizes the ids are the same.
    let (index, _) = flat(300);
    let q = data(5, DIM, 9);
    let exact = index.search(&q, 4, &SearchParams::default()).unwrap();
    assert_eq!(SearchParams::default().compute_mode(), ComputeMode::Fp32);
    for mode in [ComputeMode::Tf32, ComputeMode::Fp16, ComputeMode::Bf16] {
        let params = SearchParams::new().with_compute_mode(mode);
        assert_eq!(params.compute_mode(), mode);
        let found = index.search(&q, 4, &params).unwrap();
        assert_eq!(found.ids(), exact.ids(), "{mode:?}");
    }
}
