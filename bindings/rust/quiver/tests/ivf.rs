//! Inverted-file indexes: descriptors, nprobe and refine factor, training rules, persistence.

mod common;

use common::context;
use quiver::{Index, IndexKind, Metric, Neighbors, SearchParams, Status, NPROBE_DEFAULT};

/// `n x dim` vectors around 20 fixed centres, the same for a given seed.
fn clustered(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    let mut centres_state = 99u64;
    let centres: Vec<f32> = (0..20 * dim)
        .map(|_| {
            centres_state = centres_state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((centres_state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * 4.0
        })
        .collect();
    let mut x = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let c = ((next() + 1.0) * 10.0) as usize % 20;
        for d in 0..dim {
            x.push(centres[c * dim + d] + next());
        }
    }
    x
}

fn trained(kind: IndexKind, dim: usize, base: &[f32]) -> Index {
    let mut index = Index::new(&context(), &kind.descriptor(), dim, Metric::L2).unwrap();
    index.train(base).unwrap();
    index.add(base).unwrap();
    index
}

fn recall(got: &Neighbors, want: &Neighbors) -> f64 {
    let mut hits = 0;
    for (g, w) in got.iter().zip(want.iter()) {
        hits += g.ids.iter().filter(|id| w.ids.contains(id)).count();
    }
    hits as f64 / (want.nq() * want.k()) as f64
}

#[test]
fn descriptors_of_the_kinds() {
    assert_eq!(IndexKind::Flat.descriptor(), "Flat");
    assert_eq!(IndexKind::IvfFlat { nlist: 64 }.to_string(), "IVF64,Flat");
    let pq = IndexKind::IvfPq {
        nlist: 64,
        m: 8,
        opq_m: 0,
        refine: false,
    };
    assert_eq!(pq.descriptor(), "IVF64,PQ8");
    let err = Index::new(&context(), "IVF64,PQ7", 48, Metric::L2).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("divide"), "{}", err.message);
}

#[test]
fn ivf_flat_with_every_list_is_exact_and_nprobe_is_checked() {
    let (dim, k) = (24, 10);
    let base = clustered(3000, dim, 1);
    let queries = clustered(40, dim, 2);
    let exact = trained(IndexKind::Flat, dim, &base)
        .search(&queries, k, &SearchParams::default())
        .unwrap();
    let index = trained(IndexKind::IvfFlat { nlist: 16 }, dim, &base);
    let all = index
        .search(&queries, k, &SearchParams::new().with_nprobe(16))
        .unwrap();
    assert_eq!(all.ids(), exact.ids());

    assert_eq!(SearchParams::default().nprobe(), NPROBE_DEFAULT);
    let by_default = index.search(&queries, k, &SearchParams::default()).unwrap();
    let eight = index
        .search(&queries, k, &SearchParams::new().with_nprobe(8))
        .unwrap();
    assert_eq!(
        by_default.ids(),
        eight.ids(),
        "the default nprobe is min(nlist, 8)"
    );
    let one = index
        .search(&queries, k, &SearchParams::new().with_nprobe(1))
        .unwrap();
    assert!(recall(&one, &exact) <= recall(&eight, &exact));

    for bad in [0, 17] {
        let err = index
            .search(&queries, k, &SearchParams::new().with_nprobe(bad))
            .unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument);
        assert!(err.message.contains("nprobe"), "{}", err.message);
    }
}

#[test]
fn ivf_pq_refine_factor_and_persistence() {
    let (dim, k) = (32, 10);
    let base = clustered(3000, dim, 1);
    let queries = clustered(40, dim, 2);
    let exact = trained(IndexKind::Flat, dim, &base)
        .search(&queries, k, &SearchParams::default())
        .unwrap();
    let kind = IndexKind::IvfPq {
        nlist: 16,
        m: 8,
        opq_m: 0,
        refine: true,
    };
    let index = trained(kind, dim, &base);
    let params = SearchParams::new().with_nprobe(16).with_refine_factor(32);
    assert_eq!(params.refine_factor(), 32);
    let plain = index
        .search(
            &queries,
            k,
            &SearchParams::new().with_nprobe(16).with_refine_factor(1),
        )
        .unwrap();
    let refined = index.search(&queries, k, &params).unwrap();
    assert!(
        recall(&refined, &exact) >= 0.99,
        "{}",
        recall(&refined, &exact)
    );
    assert!(recall(&plain, &exact) <= recall(&refined, &exact));

    let loaded = Index::load_from_buffer(&context(), &index.save_to_buffer().unwrap()).unwrap();
    let again = loaded.search(&queries, k, &params).unwrap();
    assert_eq!(again.ids(), refined.ids());
    assert_eq!(again.distances(), refined.distances());
    let info = loaded.info().unwrap();
    assert!(info.is_trained);
    assert_eq!(info.count, 3000);
    assert_eq!(info.descriptor, kind.descriptor());
}

#[test]
fn ivf_training_rules() {
    let dim = 8;
    let mut index = Index::new(&context(), "IVF64,Flat", dim, Metric::L2).unwrap();
    assert!(!index.info().unwrap().is_trained);
    let few = clustered(40, dim, 1);
    assert_eq!(index.add(&few).unwrap_err().status, Status::NotTrained);
    assert_eq!(
        index
            .search(&few[..dim], 1, &SearchParams::default())
            .unwrap_err()
            .status,
        Status::NotTrained
    );
    let err = index.train(&few).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(
        err.message.contains("at least 64 vectors"),
        "{}",
        err.message
    );
}
