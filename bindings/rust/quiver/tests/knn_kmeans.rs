//! Operations without an index: exact k-NN and k-means.

mod common;

use common::{brute_force, close, context, data, l2};
use quiver::{kmeans, knn, Index, KmeansParams, Metric, SearchParams, Status};

const DIM: usize = 6;

#[test]
fn knn_matches_brute_force_and_a_flat_index() {
    let ctx = context();
    let base = data(250, DIM, 61);
    let queries = data(8, DIM, 62);
    let found = knn(
        &ctx,
        Metric::L2,
        DIM,
        &base,
        &queries,
        7,
        &SearchParams::default(),
    )
    .unwrap();
    assert_eq!((found.nq(), found.k()), (8, 7));
    for (q, hits) in found.iter().enumerate() {
        let expected = brute_force(
            &base,
            DIM,
            None,
            &queries[q * DIM..(q + 1) * DIM],
            7,
            |_| true,
        );
        assert_eq!(
            hits.ids,
            &expected.iter().map(|e| e.0).collect::<Vec<_>>()[..]
        );
        assert!(hits
            .distances
            .iter()
            .zip(&expected)
            .all(|(d, e)| close(*d, e.1)));
    }
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
    index.add(&base).unwrap();
    assert_eq!(
        index
            .search(&queries, 7, &SearchParams::default())
            .unwrap()
            .ids(),
        found.ids()
    );
}

#[test]
fn knn_filters_row_numbers() {
    let ctx = context();
    let base = data(100, DIM, 63);
    let queries = data(3, DIM, 64);
    let params = SearchParams::default().with_allowed_ids(&[10, 20, 30, 40]);
    let found = knn(&ctx, Metric::InnerProduct, DIM, &base, &queries, 6, &params).unwrap();
    for hits in found.iter() {
        let mut ids: Vec<i64> = hits.iter().map(|(id, _)| id).collect();
        ids.sort();
        assert_eq!(ids, vec![10, 20, 30, 40]);
        assert_eq!(&hits.ids[4..], &[-1, -1]);
        assert!(hits.distances[4..].iter().all(|d| *d == f32::NEG_INFINITY));
    }
}

#[test]
fn knn_argument_errors() {
    let ctx = context();
    let base = data(10, DIM, 65);
    let p = SearchParams::default();
    let err = knn(&ctx, Metric::L2, DIM, &base[..DIM * 2 + 1], &base, 1, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("base"), "{err}");
    let err = knn(&ctx, Metric::L2, DIM, &base, &base[1..], 1, &p).unwrap_err();
    assert!(err.message.contains("queries"), "{err}");
    let err = knn(&ctx, Metric::L2, 0, &base, &base, 1, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = knn(&ctx, Metric::L2, DIM, &base, &base, 0, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(!err.message.is_empty());
}

/// Four tight clusters around far-apart centres.
fn clustered(per_cluster: usize) -> (Vec<f32>, Vec<[f32; DIM]>) {
    let centres: Vec<[f32; DIM]> = (0..4)
        .map(|c| std::array::from_fn(|d| if d == c { 10.0 } else { 0.0 }))
        .collect();
    let noise = data(4 * per_cluster, DIM, 66);
    let mut x = Vec::with_capacity(4 * per_cluster * DIM);
    for i in 0..4 * per_cluster {
        let c = &centres[i % 4];
        x.extend((0..DIM).map(|d| c[d] + 0.1 * (noise[i * DIM + d] - 0.5)));
    }
    (x, centres)
}

#[test]
fn kmeans_outputs_agree_with_each_other() {
    let ctx = context();
    let (x, centres) = clustered(50);
    let params = KmeansParams::default().with_iterations(10).with_seed(7);
    let result = kmeans(&ctx, DIM, &x, 4, &params).unwrap();
    assert_eq!(result.centroids.len(), 4 * DIM);
    assert_eq!(result.assignments.len(), 200);
    // Each assignment is the nearest centroid, and the objective is the sum of those distances.
    let mut objective = 0f64;
    for (i, point) in x.chunks(DIM).enumerate() {
        let distances: Vec<f32> = result.centroids.chunks(DIM).map(|c| l2(c, point)).collect();
        let a = result.assignments[i] as usize;
        assert!(a < 4);
        assert!(
            distances.iter().all(|&d| d >= distances[a] - 1e-3),
            "point {i}: {distances:?} {a}"
        );
        objective += distances[a] as f64;
    }
    assert!(
        (objective - result.objective).abs() <= 1e-3 * objective.max(1.0),
        "objective {} vs {objective}",
        result.objective
    );
    // Every centroid is near a cluster centre or between centres; none is far away.
    for c in result.centroids.chunks(DIM) {
        assert!(
            centres
                .iter()
                .map(|centre| l2(c, centre))
                .fold(f32::INFINITY, f32::min)
                <= 51.0
        );
    }
    // Deterministic for a seed and device, whatever the thread count.
    assert_eq!(kmeans(&ctx, DIM, &x, 4, &params).unwrap(), result);
    for threads in [1, 3] {
        let other = quiver::Context::builder()
            .device(common::device_kind())
            .cpu_threads(threads)
            .build()
            .unwrap();
        assert_eq!(
            kmeans(&other, DIM, &x, 4, &params).unwrap(),
            result,
            "{threads} threads"
        );
    }
}

#[test]
fn kmeans_with_one_centroid_finds_the_mean() {
    let ctx = context();
    let x = data(64, DIM, 68);
    let result = kmeans(
        &ctx,
        DIM,
        &x,
        1,
        &KmeansParams::default().with_max_points_per_centroid(0),
    )
    .unwrap();
    let mean: Vec<f32> = (0..DIM)
        .map(|d| x.chunks(DIM).map(|p| p[d]).sum::<f32>() / 64.0)
        .collect();
    assert!(
        result
            .centroids
            .iter()
            .zip(&mean)
            .all(|(a, b)| close(*a, *b)),
        "{:?}",
        result.centroids
    );
    assert!(result.assignments.iter().all(|&a| a == 0));
    let spread: f64 = x.chunks(DIM).map(|p| l2(p, &mean) as f64).sum();
    assert!((spread - result.objective).abs() <= 1e-3 * spread);
}

#[test]
fn kmeans_params_defaults_and_errors() {
    let p = KmeansParams::default();
    assert_eq!(
        (p.iterations(), p.seed(), p.max_points_per_centroid()),
        (20, 1234, 256)
    );
    let p = KmeansParams::new().with_max_points_per_centroid(0);
    assert_eq!(p.max_points_per_centroid(), 0);

    let ctx = context();
    let x = data(20, DIM, 67);
    let err = kmeans(&ctx, DIM, &x, 0, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(!err.message.is_empty());
    let err = kmeans(&ctx, DIM, &x, 21, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = kmeans(&ctx, DIM, &x[1..], 2, &p).unwrap_err();
    assert!(err.message.contains("multiple of dim"), "{err}");
}

#[test]
fn kmeans_progress_follows_the_iterations_and_cancels() {
    let ctx = context();
    let (x, _) = clustered(50);
    let params = KmeansParams::default().with_iterations(8).with_seed(3);
    let mut seen = Vec::new();
    let with = quiver::kmeans_with_progress(&ctx, DIM, &x, 4, &params, |f| {
        seen.push(f);
        true
    })
    .unwrap();
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert_eq!(seen.last(), Some(&1.0));
    assert_eq!(with, kmeans(&ctx, DIM, &x, 4, &params).unwrap());
    let err = quiver::kmeans_with_progress(&ctx, DIM, &x, 4, &params, |f| f < 0.5).unwrap_err();
    assert_eq!(err.status, Status::Cancelled);
}
