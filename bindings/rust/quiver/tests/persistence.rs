//! Save and load, through files and buffers, and what damaged data gives.

mod common;

use common::{context, data, TempPath};
use quiver::{Index, Metric, SearchParams, Status};

const DIM: usize = 10;

fn index_with_data() -> (Index, Vec<f32>) {
    let ctx = context();
    let mut index = Index::new(&ctx, "Flat", DIM, Metric::InnerProduct).unwrap();
    let base = data(300, DIM, 51);
    let ids: Vec<i64> = (0..300).map(|i| 10 * i + 1).collect();
    index.add_with_ids(&base, &ids).unwrap();
    (index, base)
}

fn assert_same(a: &Index, b: &Index) {
    let (ia, ib) = (a.info().unwrap(), b.info().unwrap());
    assert_eq!(
        (ia.dim, ia.metric, ia.count, &ia.descriptor),
        (ib.dim, ib.metric, ib.count, &ib.descriptor)
    );
    assert_eq!((b.dim(), b.metric()), (DIM, Metric::InnerProduct));
    let queries = data(9, DIM, 52);
    let p = SearchParams::default();
    assert_eq!(
        a.search(&queries, 6, &p).unwrap(),
        b.search(&queries, 6, &p).unwrap()
    );
}

#[test]
fn save_and_load_a_file() {
    let (index, _) = index_with_data();
    let path = TempPath::new("roundtrip.qv");
    index.save(&path.0).unwrap();
    let loaded = Index::load(index.context(), &path.0).unwrap();
    assert_same(&index, &loaded);
}

#[test]
fn save_and_load_a_buffer() {
    let (index, _) = index_with_data();
    let bytes = index.save_to_buffer().unwrap();
    assert!(bytes.len() > 300 * DIM * 4);
    let loaded = Index::load_from_buffer(index.context(), &bytes).unwrap();
    assert_same(&index, &loaded);
    // A file and a buffer hold the same format.
    let path = TempPath::new("same-format.qv");
    std::fs::write(&path.0, &bytes).unwrap();
    let from_file = Index::load(index.context(), &path.0).unwrap();
    assert_same(&index, &from_file);
    // A loaded index can keep changing.
    let mut loaded = loaded;
    loaded.add(&data(1, DIM, 53)).unwrap();
    assert_eq!(loaded.info().unwrap().count, 301);
}

#[test]
fn damaged_data_is_corrupt_data() {
    let (index, _) = index_with_data();
    let ctx = index.context();
    let bytes = index.save_to_buffer().unwrap();
    let check = |data: &[u8], what: &str| {
        let err = Index::load_from_buffer(ctx, data).unwrap_err();
        assert!(
            matches!(err.status, Status::CorruptData | Status::VersionMismatch),
            "{what}: {err}"
        );
        assert!(!err.message.is_empty(), "{what}");
    };
    check(&bytes[..bytes.len() / 2], "truncated");
    check(&bytes[..8.min(bytes.len())], "header only");
    check(b"definitely not a quiver index", "garbage");
    check(&[], "empty");
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x5a;
    let err = Index::load_from_buffer(ctx, &flipped).unwrap_err();
    assert_eq!(
        err.status,
        Status::CorruptData,
        "a flipped data byte fails the checksum: {err}"
    );
}

#[test]
fn missing_files_and_bad_paths_are_io_errors() {
    let (index, _) = index_with_data();
    let ctx = index.context();
    let err = Index::load(ctx, "/nonexistent-dir/quiver/missing.qv").unwrap_err();
    assert_eq!(err.status, Status::Io, "{err}");
    assert!(!err.message.is_empty());
    let err = index.save("/nonexistent-dir/quiver/out.qv").unwrap_err();
    assert_eq!(err.status, Status::Io, "{err}");
    let err = index.save("bad\0path").unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
}
