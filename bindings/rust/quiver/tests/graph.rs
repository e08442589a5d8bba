//! The graph index ("Graph<R>") through the existing index API: recall against exact search,
//! search_width as the knob, remove, add after the build, save/load, its errors, and the GPU walk's
//! parameters (checked everywhere, ignored by CPU searches).

mod common;

use common::context;
use quiver::{
    Context, DeviceKind, GraphVisited, Index, Metric, SearchParams, Status, GRAPH_MAX_PROBES,
    GRAPH_MAX_WARPS_PER_QUERY,
};

/// `n x dim` vectors around 10 fixed centres, the same for a given seed.
fn clustered(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    let mut centres_state = 7u64;
    let centres: Vec<f32> = (0..10 * dim)
        .map(|_| {
            centres_state = centres_state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((centres_state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * 4.0
        })
        .collect();
    let mut x = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let c = ((next() + 1.0) * 5.0) as usize % 10;
        for d in 0..dim {
            x.push(centres[c * dim + d] + next());
        }
    }
    x
}

const DIM: usize = 16;

#[test]
fn graph32_finds_what_exact_search_finds() {
    let base = clustered(1500, DIM, 1);
    let queries = clustered(50, DIM, 2);
    let mut flat = Index::new(&context(), "Flat", DIM, Metric::L2).unwrap();
    flat.add(&base).unwrap();
    let mut graph = Index::new(&context(), "Graph32", DIM, Metric::L2).unwrap();
    graph.add(&base).unwrap();
    assert_eq!(graph.info().unwrap().count, 1500);
    let want = flat.search(&queries, 10, &SearchParams::default()).unwrap();
    let got = graph
        .search(&queries, 10, &SearchParams::new().with_search_width(64))
        .unwrap();
    let hits: usize = got
        .iter()
        .zip(want.iter())
        .map(|(g, w)| g.ids.iter().filter(|id| w.ids.contains(id)).count())
        .sum();
    assert!(
        hits as f64 / 500.0 >= 0.95,
        "recall {}",
        hits as f64 / 500.0
    );
}

#[test]
fn graph_remove_add_and_reload() {
    let base = clustered(1000, DIM, 3);
    let queries = clustered(20, DIM, 4);
    let mut graph = Index::new(&context(), "Graph16,K32", DIM, Metric::Cosine).unwrap();
    graph.add(&base).unwrap();
    assert_eq!(graph.remove(&[0, 1, 2, 999_999]).unwrap(), 3);
    assert_eq!(graph.info().unwrap().count, 997);
    let more = clustered(10, DIM, 5);
    let ids: Vec<i64> = (5000..5010).collect();
    graph.add_with_ids(&more, &ids).unwrap();
    let own = graph.search(&more, 1, &SearchParams::default()).unwrap();
    assert_eq!(own.ids(), &ids[..]);

    let before = graph
        .search(&queries, 10, &SearchParams::default())
        .unwrap();
    for id in before.ids() {
        assert!(*id > 2, "removed id {id} returned");
    }
    let bytes = graph.save_to_buffer().unwrap();
    let loaded = Index::load_from_buffer(&context(), &bytes).unwrap();
    let after = loaded
        .search(&queries, 10, &SearchParams::default())
        .unwrap();
    assert_eq!(before.ids(), after.ids());
    let mut damaged = bytes.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x10;
    let err = Index::load_from_buffer(&context(), &damaged).unwrap_err();
    assert_eq!(err.status, Status::CorruptData);
}

#[test]
fn graph_errors_name_the_problem() {
    let err = Index::new(&context(), "Graph1", DIM, Metric::L2).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.to_string().contains("Graph<R>"), "{err}");
    let graph = Index::new(&context(), "Graph32", DIM, Metric::L2).unwrap();
    let err = graph
        .search(&clustered(1, DIM, 6), 5, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::NotTrained);
}

#[test]
fn graph_walk_params_default_to_the_library_s_choices() {
    let p = SearchParams::default();
    assert_eq!(p.graph_visited(), GraphVisited::Default);
    assert_eq!(GraphVisited::default(), GraphVisited::Default);
    assert_eq!(
        (
            p.graph_probes(),
            p.graph_warps_per_query(),
            p.graph_queries_per_warp()
        ),
        (0, 0, 0)
    );
    assert_eq!((GRAPH_MAX_PROBES, GRAPH_MAX_WARPS_PER_QUERY), (8, 16));
    let p = p
        .with_graph_visited(GraphVisited::Cuckoo)
        .with_graph_probes(2)
        .with_graph_warps_per_query(1)
        .with_graph_queries_per_warp(4);
    assert_eq!(p.graph_visited(), GraphVisited::Cuckoo);
    assert_eq!(
        (
            p.graph_probes(),
            p.graph_warps_per_query(),
            p.graph_queries_per_warp()
        ),
        (2, 1, 4)
    );
    let shown = format!("{p:?}");
    assert!(
        shown.contains("Cuckoo") && shown.contains("graph_queries_per_warp: 4"),
        "{shown}"
    );
}

#[test]
fn bad_graph_walk_params_are_invalid_arguments_whatever_the_index() {
    let base = clustered(300, DIM, 7);
    let queries = clustered(5, DIM, 8);
    let bad = [
        (
            "graph_probes",
            SearchParams::new().with_graph_probes(GRAPH_MAX_PROBES + 1),
        ),
        (
            "graph_probes",
            SearchParams::new().with_graph_probes(u32::MAX),
        ),
        (
            "graph_warps_per_query",
            SearchParams::new().with_graph_warps_per_query(GRAPH_MAX_WARPS_PER_QUERY + 1),
        ),
        (
            "graph_queries_per_warp",
            SearchParams::new().with_graph_queries_per_warp(3),
        ),
        (
            "graph_queries_per_warp",
            SearchParams::new().with_graph_queries_per_warp(8),
        ),
        (
            "graph_warps_per_query",
            SearchParams::new()
                .with_graph_queries_per_warp(2)
                .with_graph_warps_per_query(2),
        ),
    ];
    for descriptor in ["Graph16", "Flat"] {
        let mut index = Index::new(&context(), descriptor, DIM, Metric::L2).unwrap();
        index.add(&base).unwrap();
        let before = index.search(&queries, 5, &SearchParams::default()).unwrap();
        for (field, params) in &bad {
            let err = index.search(&queries, 5, params).unwrap_err();
            assert_eq!(
                err.status,
                Status::InvalidArgument,
                "{descriptor} {params:?}"
            );
            assert!(err.message.contains(field), "{descriptor}: {err}");
            let err = index.range_search(&queries, 1.0, params).unwrap_err();
            assert_eq!(
                err.status,
                Status::InvalidArgument,
                "{descriptor} {params:?}"
            );
        }
        assert_eq!(index.info().unwrap().count, 300);
        let after = index.search(&queries, 5, &SearchParams::default()).unwrap();
        assert_eq!(before, after, "{descriptor}");
    }
}

#[test]
fn cpu_searches_ignore_every_valid_graph_walk() {
    let cpu = Context::builder()
        .device(DeviceKind::Cpu)
        .cpu_threads(2)
        .build()
        .unwrap();
    let mut graph = Index::new(&cpu, "Graph16", DIM, Metric::L2).unwrap();
    graph.add(&clustered(1000, DIM, 9)).unwrap();
    let queries = clustered(30, DIM, 10);
    let defaults = SearchParams::new().with_search_width(32);
    let want = graph.search(&queries, 10, &defaults).unwrap();
    let mut combinations = 0;
    for visited in [
        GraphVisited::Default,
        GraphVisited::HashTable,
        GraphVisited::Bloom,
        GraphVisited::Cuckoo,
    ] {
        for probes in [0, 1, 2, GRAPH_MAX_PROBES] {
            for warps in [0, 1, 4, GRAPH_MAX_WARPS_PER_QUERY] {
                for queries_per_warp in [0, 1, 2, 4] {
                    if queries_per_warp > 1 && warps > 1 {
                        continue; // refused (above)
                    }
                    let params = defaults
                        .clone()
                        .with_graph_visited(visited)
                        .with_graph_probes(probes)
                        .with_graph_warps_per_query(warps)
                        .with_graph_queries_per_warp(queries_per_warp);
                    let got = graph.search(&queries, 10, &params).unwrap();
                    assert_eq!(got, want, "{params:?}");
                    combinations += 1;
                }
            }
        }
    }
    assert_eq!(combinations, 4 * 4 * 12);
}

#[test]
fn graph_build_reports_progress_and_a_cancel_changes_nothing() {
    let base = clustered(1000, DIM, 6);
    let mut graph = Index::new(&context(), "Graph16", DIM, Metric::L2).unwrap();
    let mut seen = Vec::new();
    graph
        .with_progress(
            |f| {
                seen.push(f);
                true
            },
            |index| index.add(&base),
        )
        .unwrap();
    assert!(seen.len() >= 5, "the build's steps report: {seen:?}");
    assert_eq!(seen.first(), Some(&0.0));
    assert_eq!(seen.last(), Some(&1.0));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");

    // Cancelled half way through a build: nothing added; the callback is gone afterwards.
    let mut fresh = Index::new(&context(), "Graph16", DIM, Metric::L2).unwrap();
    let err = fresh
        .with_progress(|f| f < 0.5, |index| index.add(&base))
        .unwrap_err();
    assert_eq!(err.status, Status::Cancelled);
    assert_eq!(fresh.info().unwrap().count, 0);
    fresh.add(&base).unwrap();
    assert_eq!(fresh.info().unwrap().count, 1000);

    // A panic in the callback cancels the add and comes back out of with_progress.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        graph.with_progress(|_| panic!("stop"), |index| index.add(&clustered(3, DIM, 7)))
    }));
    assert!(caught.is_err());
    assert_eq!(graph.info().unwrap().count, 1000);
}
