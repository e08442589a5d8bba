//! The distributed index (feature `mpi`) in one process: MPI starts as a singleton (a world of one
//! rank, no mpirun) and can start only once per process, so everything runs in one test, which
//! finalises MPI at its end.
#![cfg(feature = "mpi")]

mod common;

use common::{brute_force, close, context, data};
use quiver::{DistIndex, DistOptions, Metric, MpiComm, Neighbors, SearchParams, Status};

const DIM: usize = 8;

/// Every row of `found` equals brute force over `base` (ids given, or row numbers).
fn check_search(found: &Neighbors, base: &[f32], ids: &[i64], queries: &[f32], k: usize) {
    assert_eq!(found.nq(), queries.len() / DIM);
    for (q, hits) in found.iter().enumerate() {
        let want = brute_force(base, DIM, Some(ids), &queries[q * DIM..][..DIM], k, |_| {
            true
        });
        assert_eq!(hits.len(), k);
        for (rank, (&(want_id, want_d), (&id, &d))) in want
            .iter()
            .zip(hits.ids.iter().zip(hits.distances))
            .enumerate()
        {
            assert!(close(d, want_d), "query {q} rank {rank}: {d} vs {want_d}");
            // Ties may order ids differently: the id's own distance must be the one expected.
            if id != want_id {
                let row = ids.iter().position(|&x| x == id).expect("a known id");
                assert!(close(
                    common::l2(&base[row * DIM..][..DIM], &queries[q * DIM..][..DIM]),
                    d
                ));
            }
        }
    }
}

#[test]
fn distributed_index_in_a_singleton_world() {
    let comm = MpiComm::world().expect("MPI_COMM_WORLD");
    assert!(!comm.as_raw().is_null());
    let ctx = context();
    let options = DistOptions::default();
    assert_eq!(options.root(), 0);
    assert_eq!(options.timeout(), std::time::Duration::from_secs(60));

    // Create with Flat, add with consecutive ids and with given ids.
    let mut index = DistIndex::new(&ctx, comm, "Flat", DIM, Metric::L2, &options).expect("create");
    assert_eq!(
        (index.dim(), index.rank(), index.size(), index.root()),
        (DIM, 0, 1, 0)
    );
    assert!(index.is_root());
    let info = index.info().unwrap();
    assert_eq!(
        (info.rank, info.size, info.local_count, info.total_count),
        (0, 1, 0, 0)
    );
    let base = data(300, DIM, 1);
    index.add(&base[..200 * DIM]).unwrap();
    let more_ids: Vec<i64> = (0..100).map(|i| 1000 + 2 * i).collect();
    index.add_with_ids(&base[200 * DIM..], &more_ids).unwrap();
    let ids: Vec<i64> = (0..200).chain(more_ids.iter().copied()).collect();
    let info = index.info().unwrap();
    assert_eq!((info.local_count, info.total_count), (300, 300));

    // Search equals brute force; on the root (the only rank here) the result is Some.
    let queries = data(7, DIM, 2);
    let k = 10;
    let found = index
        .search(&queries, k, &SearchParams::default())
        .unwrap()
        .expect("results on the root");
    check_search(&found, &base, &ids, &queries, k);

    // A filter of global ids applies.
    let allowed: Vec<i64> = ids.iter().copied().filter(|id| id % 3 == 0).collect();
    let params = SearchParams::default().with_allowed_ids(&allowed);
    let filtered = index.search(&queries, k, &params).unwrap().unwrap();
    assert!(filtered.iter().all(|h| h.ids.iter().all(|id| id % 3 == 0)));

    // Range search: every vector within the radius, as brute force finds them.
    let radius = 0.4;
    let near = index
        .range_search(&queries, radius, &SearchParams::default())
        .unwrap()
        .expect("results on the root");
    assert_eq!(near.nq(), 7);
    for q in 0..7 {
        let query = &queries[q * DIM..][..DIM];
        let mut want: Vec<i64> = base
            .chunks(DIM)
            .zip(&ids)
            .filter(|(v, _)| common::l2(v, query) <= radius)
            .map(|(_, &id)| id)
            .collect();
        let mut got = near.get(q).unwrap().ids.to_vec();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "query {q}");
    }

    // Remove: the count over all ranks, ids not in the index ignored.
    assert_eq!(index.remove(&[0, 1, 1000, 999_999]).unwrap(), 3);
    assert_eq!(index.info().unwrap().total_count, 297);
    let after = index
        .search(&queries, k, &SearchParams::default())
        .unwrap()
        .unwrap();
    assert!(after.ids().iter().all(|id| ![0, 1, 1000].contains(id)));
    let kept: Vec<usize> = (0..300).filter(|&r| ![0, 1, 200].contains(&r)).collect();
    let kept_base: Vec<f32> = kept
        .iter()
        .flat_map(|&r| base[r * DIM..][..DIM].to_vec())
        .collect();
    let kept_ids: Vec<i64> = kept.iter().map(|&r| ids[r]).collect();
    check_search(&after, &kept_base, &kept_ids, &queries, k);

    // Save and load through a temporary directory.
    let dir = std::env::temp_dir().join(format!("quiver-rust-{}-dist", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("index");
    index.save(&prefix).unwrap();
    assert!(dir.join("index.manifest").is_file());
    assert!(dir.join("index.0-of-1.qvi").is_file());
    let loaded = DistIndex::load(&ctx, comm, &prefix, &options).expect("load");
    assert_eq!((loaded.dim(), loaded.rank(), loaded.size()), (DIM, 0, 1));
    assert_eq!(loaded.info().unwrap().total_count, 297);
    let again = loaded
        .search(&queries, k, &SearchParams::default())
        .unwrap()
        .unwrap();
    assert_eq!(again, after);
    drop(loaded);
    let missing = DistIndex::load(&ctx, comm, dir.join("nothing"), &options).unwrap_err();
    assert_eq!(missing.status, Status::Io);
    assert!(!missing.message.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();

    // Errors: the library's, with qv_dist_last_error_message's text.
    let bad = DistIndex::new(&ctx, comm, "NoSuchKind", DIM, Metric::L2, &options).unwrap_err();
    assert_eq!(bad.status, Status::InvalidArgument);
    assert!(!bad.message.is_empty(), "a message: {bad}");
    let bad_root = options.with_root(1);
    let err = DistIndex::new(&ctx, comm, "Flat", DIM, Metric::L2, &bad_root).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("root"), "{err}");
    // The binding's own checks (the ranks still fail together, here one).
    let err = DistIndex::new(&ctx, comm, "Fl\0at", DIM, Metric::L2, &options).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("NUL"), "{err}");
    let err = index.add(&base[..DIM + 1]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("multiple of dim"), "{err}");
    let err = index
        .search(&queries, quiver::MAX_K + 1, &SearchParams::default())
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    let err = index.add_with_ids(&base[..DIM], &[5]).unwrap_err(); // id 5 is in the index
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(!err.message.is_empty());
    assert_eq!(index.info().unwrap().total_count, 297, "nothing half-added");

    // An inverted file: trained (on rank 0, the model shared), then searched exactly (nprobe = nlist).
    let mut ivf = DistIndex::new(&ctx, comm, "IVF4,Flat", DIM, Metric::L2, &options).unwrap();
    assert_eq!(ivf.add(&base).unwrap_err().status, Status::NotTrained);
    ivf.train(&base).unwrap();
    ivf.add(&base).unwrap();
    let exact = SearchParams::default().with_nprobe(4);
    let found = ivf.search(&queries, k, &exact).unwrap().unwrap();
    let rows: Vec<i64> = (0..300).collect();
    check_search(&found, &base, &rows, &queries, k);

    // finalize refuses while an index lives, then ends MPI; MPI does not start again.
    let err = quiver::finalize().unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    drop(ivf);
    drop(index);
    quiver::finalize().expect("finalize");
    assert_eq!(
        MpiComm::world().unwrap_err().status,
        Status::InvalidArgument
    );
    let err = DistIndex::new(&ctx, comm, "Flat", DIM, Metric::L2, &options).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
}
