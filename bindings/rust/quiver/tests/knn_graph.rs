//! `knn_graph`: exact graphs against brute force, the approximate method's recall estimate,
//! progress and cancel through a closure, bad input.

mod common;

use common::{brute_force, close, context, data};
use quiver::{knn_graph, knn_graph_with_progress, KnnGraphMethod, KnnGraphParams, Metric, Status};

const DIM: usize = 5;

#[test]
fn exact_graph_matches_brute_force_without_self() {
    let ctx = context();
    let n = 120;
    let x = data(n, DIM, 71);
    let params = KnnGraphParams::default().with_method(KnnGraphMethod::Exact);
    let graph = knn_graph(&ctx, Metric::L2, DIM, &x, 6, &params).unwrap();
    assert_eq!(graph.recall, Some(1.0));
    assert_eq!((graph.neighbors.nq(), graph.neighbors.k()), (n, 6));
    for (u, hits) in graph.neighbors.iter().enumerate() {
        let expected: Vec<(i64, f32)> =
            brute_force(&x, DIM, None, &x[u * DIM..(u + 1) * DIM], 7, |_| true)
                .into_iter()
                .filter(|e| e.0 != u as i64)
                .take(6)
                .collect();
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
}

#[test]
fn approximate_graph_reports_its_recall() {
    let ctx = context();
    let n = 3000;
    let x = data(n, 8, 72);
    let params = KnnGraphParams::default()
        .with_method(KnnGraphMethod::Approximate)
        .with_target_recall(0.9)
        .with_recall_sample(300);
    let graph = knn_graph(&ctx, Metric::L2, 8, &x, 10, &params).unwrap();
    let recall = graph.recall.expect("a recall estimate");
    assert!((0.85..=1.0).contains(&recall), "recall {recall}");
    let no_sample = KnnGraphParams::default().with_method(KnnGraphMethod::Approximate);
    assert_eq!(
        knn_graph(&ctx, Metric::L2, 8, &x, 10, &no_sample)
            .unwrap()
            .recall,
        None
    );
}

#[test]
fn progress_rises_and_false_cancels() {
    let ctx = context();
    let x = data(2000, DIM, 73);
    let params = KnnGraphParams::default().with_method(KnnGraphMethod::Exact);
    let mut seen = Vec::new();
    knn_graph_with_progress(&ctx, Metric::L2, DIM, &x, 4, &params, |f| {
        seen.push(f);
        true
    })
    .unwrap();
    assert!(!seen.is_empty() && seen.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(*seen.last().unwrap(), 1.0);

    let err =
        knn_graph_with_progress(&ctx, Metric::L2, DIM, &x, 4, &params, |_| false).unwrap_err();
    assert_eq!(err.status, Status::Cancelled);
}

#[test]
fn a_panicking_progress_closure_panics_after_the_call() {
    let ctx = context();
    let x = data(500, DIM, 74);
    let params = KnnGraphParams::default();
    let outcome = std::panic::catch_unwind(|| {
        let _ = knn_graph_with_progress(&ctx, Metric::L2, DIM, &x, 4, &params, |_| {
            panic!("stop here")
        });
    });
    assert!(outcome.is_err());
    // The context still works.
    assert!(knn_graph(&ctx, Metric::L2, DIM, &x, 4, &params).is_ok());
}

#[test]
fn bad_input_is_an_invalid_argument() {
    let ctx = context();
    let x = data(10, DIM, 75);
    let p = KnnGraphParams::default();
    for k in [0, 10, 11] {
        let err = knn_graph(&ctx, Metric::L2, DIM, &x, k, &p).unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument, "k = {k}");
        assert!(err.message.contains("k = "), "{}", err.message);
    }
    let err = knn_graph(&ctx, Metric::L2, DIM, &x[..DIM], 1, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let mut bad = x.clone();
    bad[7] = f32::NAN;
    let err = knn_graph(&ctx, Metric::L2, DIM, &bad, 2, &p).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("row 1"), "{}", err.message);
    let err = knn_graph(&ctx, Metric::L2, DIM, &x, 2, &p.with_target_recall(1.5)).unwrap_err();
    assert!(err.message.contains("target_recall"), "{}", err.message);
}
