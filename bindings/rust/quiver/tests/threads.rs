//! Concurrent use: one index searched from many threads, per-thread error messages.

mod common;

use std::sync::Arc;
use std::thread;

use common::{context, data};
use quiver::{Index, Metric, SearchParams, Status};

const DIM: usize = 16;

#[test]
fn many_threads_search_one_index() {
    let ctx = context();
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
    index.add(&data(2000, DIM, 71)).unwrap();
    let index = Arc::new(index);
    let queries = Arc::new(data(32, DIM, 72));
    let expected = Arc::new(
        index
            .search(&queries, 10, &SearchParams::default())
            .unwrap(),
    );
    let expected_range = index
        .range_search(&queries, 0.8, &SearchParams::default())
        .unwrap();
    let expected_range = Arc::new((
        expected_range.lims().to_vec(),
        expected_range.ids().to_vec(),
    ));

    let workers: Vec<_> = (0..8)
        .map(|t| {
            let (index, queries, expected, expected_range) = (
                index.clone(),
                queries.clone(),
                expected.clone(),
                expected_range.clone(),
            );
            thread::spawn(move || {
                let params = SearchParams::default();
                for round in 0..25 {
                    match (t + round) % 3 {
                        0 => assert_eq!(index.search(&queries, 10, &params).unwrap(), *expected),
                        1 => {
                            let r = index.range_search(&queries, 0.8, &params).unwrap();
                            assert_eq!((r.lims().to_vec(), r.ids().to_vec()), *expected_range);
                        }
                        _ => assert_eq!(index.info().unwrap().count, 2000),
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

#[test]
fn each_thread_sees_its_own_error_message() {
    // Even threads fail one way, odd threads another, interleaved; a message shared between
    // threads would show up as a thread seeing the other kind's message.
    let ctx = context();
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
    index.add(&data(100, DIM, 73)).unwrap();
    let index = Arc::new(index);
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let index = index.clone();
            thread::spawn(move || {
                let mut messages = std::collections::BTreeSet::new();
                for _ in 0..50 {
                    let err = if t % 2 == 0 {
                        index
                            .search(&[0.5; DIM], 0, &SearchParams::default())
                            .unwrap_err()
                    } else {
                        Index::load(index.context(), "/nonexistent-dir/x.qv").unwrap_err()
                    };
                    let expected = if t % 2 == 0 {
                        Status::InvalidArgument
                    } else {
                        Status::Io
                    };
                    assert_eq!(err.status, expected);
                    messages.insert(err.message);
                    index
                        .search(&[0.5; DIM], 1, &SearchParams::default())
                        .unwrap();
                }
                (t % 2, messages)
            })
        })
        .collect();
    let mut by_kind = [
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    ];
    for w in workers {
        let (kind, messages) = w.join().unwrap();
        by_kind[kind].extend(messages);
    }
    assert_eq!(by_kind[0].len(), 1, "{:?}", by_kind[0]);
    assert_eq!(by_kind[1].len(), 1, "{:?}", by_kind[1]);
    assert_ne!(by_kind[0], by_kind[1]);
    assert!(by_kind.iter().flatten().all(|m| !m.is_empty()));
}

#[test]
fn a_context_serves_many_threads() {
    let ctx = context();
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let ctx = ctx.clone();
            thread::spawn(move || {
                let mut index = Index::new(&ctx, "Flat", DIM, Metric::L2).unwrap();
                let base = data(50, DIM, 80 + t);
                index.add(&base).unwrap();
                let found = index
                    .search(&base[..DIM], 1, &SearchParams::default())
                    .unwrap();
                assert_eq!(found.ids(), &[0]);
                let knn = quiver::knn(
                    &ctx,
                    Metric::L2,
                    DIM,
                    &base,
                    &base[..DIM],
                    1,
                    &SearchParams::default(),
                );
                assert_eq!(knn.unwrap().ids(), &[0]);
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}
