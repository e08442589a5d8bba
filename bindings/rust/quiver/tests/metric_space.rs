//! Metric-space indexes ("LC<b>", "SSS<alpha>", "Flat" of L1, L-infinity and edit distance): byte
//! strings against a dynamic-programming edit distance, L1 and L-infinity vectors against brute
//! force, the range search result cap, and the errors of mixing strings and vectors.

mod common;

use std::collections::HashSet;

use common::{close, context, data};
use quiver::{Index, IndexKind, Metric, SearchParams, Status};

/// Levenshtein distance over bytes: insertions, deletions and substitutions, one row at a time.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// `n` words of 1 ..= 6 letters from "abcde", the same for a given seed: short and from a small
/// alphabet, so that radii 1 and 2 find some words and not all.
fn words(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |m: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m) as usize
    };
    (0..n)
        .map(|_| {
            let len = 1 + next(6);
            (0..len).map(|_| b"abcde"[next(5)]).collect()
        })
        .collect()
}

/// Queries: some words of the index, some with one letter changed, some new.
fn queries(base: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut q: Vec<Vec<u8>> = base.iter().step_by(37).cloned().collect();
    for w in base.iter().skip(5).step_by(41) {
        let mut changed = w.clone();
        changed[0] = if changed[0] == b'a' { b'e' } else { b'a' };
        q.push(changed);
    }
    q.extend(words(8, 77));
    q.push(Vec::new());
    q
}

fn strings_index(descriptor: &str, base: &[Vec<u8>]) -> Index {
    let mut index = Index::new(&context(), descriptor, 0, Metric::Edit).unwrap();
    index.add_strings(base).unwrap();
    index
}

#[test]
fn edit_distance_reference_is_levenshtein() {
    assert_eq!(edit_distance(b"kitten", b"sitting"), 3);
    assert_eq!(edit_distance(b"", b"abc"), 3);
    assert_eq!(edit_distance(b"flaw", b"lawn"), 2);
    assert_eq!(edit_distance(b"same", b"same"), 0);
}

#[test]
fn string_range_search_matches_dynamic_programming() {
    let base = words(200, 1);
    let queries = queries(&base);
    for descriptor in ["LC8", "SSS0.5", "Flat"] {
        let index = strings_index(descriptor, &base);
        let info = index.info().unwrap();
        assert_eq!((info.dim, info.metric, info.count), (0, Metric::Edit, 200));
        assert_eq!((index.dim(), index.metric()), (0, Metric::Edit));
        for radius in [1usize, 2] {
            let result = index
                .range_search_strings(&queries, radius as f32, &SearchParams::default())
                .unwrap();
            assert_eq!(result.nq(), queries.len());
            let mut total = 0;
            for (q, hits) in result.iter().enumerate() {
                let expected: Vec<i64> = (0..base.len())
                    .filter(|&i| edit_distance(&queries[q], &base[i]) <= radius)
                    .map(|i| i as i64)
                    .collect();
                let mut got = hits.ids.to_vec();
                got.sort();
                assert_eq!(got, expected, "{descriptor} radius {radius} query {q}");
                for (id, d) in hits.iter() {
                    assert_eq!(d, edit_distance(&queries[q], &base[id as usize]) as f32);
                }
                assert!(
                    hits.distances.windows(2).all(|w| w[0] <= w[1]),
                    "closest first"
                );
                total += expected.len();
            }
            assert!(
                total > queries.len(),
                "{descriptor} radius {radius}: too few hits to test"
            );
            assert!(
                total < queries.len() * base.len() / 4,
                "radius {radius} finds too much"
            );
        }
    }
}

#[test]
fn string_knn_matches_dynamic_programming() {
    let base = words(200, 2);
    let queries = queries(&base);
    let k = 5;
    for descriptor in ["LC8", "SSS0.5", "Flat"] {
        let index = strings_index(descriptor, &base);
        let found = index
            .search_strings(&queries, k, &SearchParams::default())
            .unwrap();
        assert_eq!((found.nq(), found.k()), (queries.len(), k));
        for (q, hits) in found.iter().enumerate() {
            let mut want: Vec<usize> = base.iter().map(|w| edit_distance(&queries[q], w)).collect();
            want.sort();
            let got: Vec<usize> = hits.distances.iter().map(|&d| d as usize).collect();
            assert_eq!(got, want[..k], "{descriptor} query {q}");
            // Ties may come in any order: check each id's own distance, and that ids are distinct.
            for (id, d) in hits.iter() {
                assert_eq!(d, edit_distance(&queries[q], &base[id as usize]) as f32);
            }
            assert_eq!(hits.ids.iter().collect::<HashSet<_>>().len(), k);
        }
        // The filter applies: only even ids.
        let even: Vec<i64> = (0..200).step_by(2).collect();
        let params = SearchParams::default().with_allowed_ids(&even);
        let found = index.search_strings(&queries, k, &params).unwrap();
        for (q, hits) in found.iter().enumerate() {
            let mut want: Vec<usize> = base
                .iter()
                .step_by(2)
                .map(|w| edit_distance(&queries[q], w))
                .collect();
            want.sort();
            assert!(hits.ids.iter().all(|id| id % 2 == 0), "{descriptor}");
            let got: Vec<usize> = hits.distances.iter().map(|&d| d as usize).collect();
            assert_eq!(got, want[..k], "{descriptor} filtered query {q}");
        }
    }
}

#[test]
fn empty_and_non_ascii_strings_are_plain_bytes() {
    let strings: Vec<&[u8]> = vec![
        b"",
        "é".as_bytes(), // two bytes, 0xc3 0xa9
        &[0, 255, 128],
        b"e",
        b"ab\0c",
        "日本".as_bytes(),
    ];
    for descriptor in ["LC2", "SSS0.4", "Flat"] {
        let mut index = Index::new(&context(), descriptor, 0, Metric::Edit).unwrap();
        index
            .add_strings_with_ids(&strings, &[100, 101, 102, 103, 104, 105])
            .unwrap();
        let found = index
            .search_strings(&strings, strings.len(), &SearchParams::default())
            .unwrap();
        for (q, hits) in found.iter().enumerate() {
            assert_eq!(
                hits.ids[0],
                100 + q as i64,
                "{descriptor}: each string finds itself"
            );
            assert_eq!(hits.distances[0], 0.0);
            for (id, d) in hits.iter() {
                let want = edit_distance(strings[q], strings[(id - 100) as usize]);
                assert_eq!(d, want as f32, "{descriptor} query {q} id {id}");
            }
        }
        let exact = index
            .range_search_strings([[0u8, 255, 128]], 0.0, &SearchParams::default())
            .unwrap();
        assert_eq!(exact.ids(), &[102]);
        // "é" is two bytes from "e" (one substitution, one deletion) and from "".
        let near = index
            .range_search_strings(["é"], 1.0, &SearchParams::default())
            .unwrap();
        assert_eq!(near.ids(), &[101]);
        let none = index
            .search_strings(Vec::<&[u8]>::new(), 3, &SearchParams::default())
            .unwrap();
        assert_eq!((none.nq(), none.ids().len()), (0, 0));
    }
}

#[test]
fn string_index_survives_save_and_load() {
    let base = words(200, 3);
    let index = strings_index("LC8", &base);
    let loaded = Index::load_from_buffer(&context(), &index.save_to_buffer().unwrap()).unwrap();
    assert_eq!((loaded.dim(), loaded.metric()), (0, Metric::Edit));
    let info = loaded.info().unwrap();
    assert_eq!((info.count, info.descriptor.as_str()), (200, "LC8"));
    let queries = queries(&base);
    let params = SearchParams::default();
    assert_eq!(
        loaded
            .search_strings(&queries, 5, &params)
            .unwrap()
            .distances(),
        index
            .search_strings(&queries, 5, &params)
            .unwrap()
            .distances()
    );
}

/// L1 or L-infinity distance.
fn distance(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    let diffs = a.iter().zip(b).map(|(x, y)| (x - y).abs());
    match metric {
        Metric::L1 => diffs.sum(),
        Metric::LInf => diffs.fold(0.0, f32::max),
        _ => unreachable!("only L1 and L-infinity here"),
    }
}

#[test]
fn l1_and_linf_vector_indexes_match_brute_force() {
    const DIM: usize = 8;
    let base = data(500, DIM, 11);
    let queries = data(20, DIM, 12);
    let rows = |x: &[f32]| -> Vec<Vec<f32>> { x.chunks(DIM).map(<[f32]>::to_vec).collect() };
    let (base_rows, query_rows) = (rows(&base), rows(&queries));
    for (descriptor, metric, radius) in [
        ("SSS0.5", Metric::L1, 1.2f32),
        ("LC16", Metric::LInf, 0.35),
        ("Flat", Metric::L1, 1.2),
    ] {
        let mut index = Index::new(&context(), descriptor, DIM, metric).unwrap();
        index.add(&base).unwrap();
        let k = 10;
        let found = index.search(&queries, k, &SearchParams::default()).unwrap();
        for (q, hits) in found.iter().enumerate() {
            let mut want: Vec<f32> = base_rows
                .iter()
                .map(|v| distance(metric, v, &query_rows[q]))
                .collect();
            want.sort_by(f32::total_cmp);
            for (j, (id, d)) in hits.iter().enumerate() {
                assert!(
                    close(d, want[j]),
                    "{descriptor} query {q} rank {j}: {d} vs {}",
                    want[j]
                );
                assert!(close(
                    d,
                    distance(metric, &base_rows[id as usize], &query_rows[q])
                ));
            }
        }
        let result = index
            .range_search(&queries, radius, &SearchParams::default())
            .unwrap();
        let mut total = 0;
        for (q, hits) in result.iter().enumerate() {
            let at = |id: usize| distance(metric, &base_rows[id], &query_rows[q]);
            // Vectors right at the radius may fall either way by rounding; compare the clear ones.
            let clear = |id: &i64| (at(*id as usize) - radius).abs() > 1e-4;
            let expected: Vec<i64> = (0..base_rows.len())
                .filter(|&i| at(i) <= radius)
                .map(|i| i as i64)
                .filter(clear)
                .collect();
            let mut got: Vec<i64> = hits.ids.iter().copied().filter(clear).collect();
            got.sort();
            assert_eq!(got, expected, "{descriptor} query {q}");
            total += expected.len();
        }
        assert!(total > 0, "{descriptor}: the radius finds nothing to test");
    }
}

#[test]
fn max_range_results_caps_every_query() {
    let base = words(200, 4);
    let queries = queries(&base);
    let index = strings_index("LC8", &base);
    let most = queries
        .iter()
        .map(|q| base.iter().filter(|w| edit_distance(q, w) <= 2).count())
        .max()
        .unwrap();
    assert!(most > 1);
    let params = SearchParams::default().with_max_range_results(most - 1);
    assert_eq!(params.max_range_results(), most - 1);
    let err = index
        .range_search_strings(&queries, 2.0, &params)
        .unwrap_err();
    assert_eq!(err.status, Status::TooManyResults, "{err}");
    assert_eq!(err.code(), quiver::sys::QV_ERR_TOO_MANY_RESULTS);
    assert!(!err.message.is_empty());
    let params = SearchParams::default().with_max_range_results(most);
    let result = index.range_search_strings(&queries, 2.0, &params).unwrap();
    assert_eq!(result.iter().map(|h| h.len()).max(), Some(most));
    // k-NN searches ignore it.
    index
        .search_strings(
            &queries,
            5,
            &SearchParams::default().with_max_range_results(1),
        )
        .unwrap();

    // The same on a vector index.
    let mut flat = Index::new(&context(), "Flat", 4, Metric::L2).unwrap();
    flat.add(&data(100, 4, 5)).unwrap();
    let capped = SearchParams::default().with_max_range_results(10);
    let err = flat
        .range_search(&data(3, 4, 6), 100.0, &capped)
        .unwrap_err();
    assert_eq!(err.status, Status::TooManyResults, "{err}");
    let fine = flat
        .range_search(
            &data(3, 4, 6),
            100.0,
            &SearchParams::default().with_max_range_results(100),
        )
        .unwrap();
    assert_eq!(fine.len(), 300);
    assert_eq!(SearchParams::default().max_range_results(), 0);
    assert_eq!(
        SearchParams::default()
            .with_max_range_results(usize::MAX)
            .max_range_results() as u64,
        i64::MAX as u64
    );
}

#[test]
fn strings_and_vectors_do_not_mix() {
    let mut strings = strings_index("LC8", &words(20, 5));
    let params = SearchParams::default();
    let unsupported = |r: Result<(), quiver::Error>| {
        let err = r.unwrap_err();
        assert_eq!(err.status, Status::Unsupported, "{err}");
        assert!(!err.message.is_empty());
    };
    unsupported(strings.add(&[1.0, 2.0]));
    unsupported(strings.add_with_ids(&[1.0], &[7]));
    unsupported(strings.train(&[1.0]));
    unsupported(strings.search(&[1.0], 1, &params).map(drop));
    unsupported(strings.range_search(&[1.0], 1.0, &params).map(drop));
    assert_eq!(strings.info().unwrap().count, 20, "nothing was added");

    let mut vectors = Index::new(&context(), "LC8", 4, Metric::L1).unwrap();
    vectors.add(&data(50, 4, 6)).unwrap();
    unsupported(vectors.add_strings(["abc"]));
    unsupported(vectors.search_strings(["abc"], 1, &params).map(drop));
    unsupported(
        vectors
            .range_search_strings(["abc"], 1.0, &params)
            .map(drop),
    );
    assert_eq!(vectors.info().unwrap().count, 50);

    // Ids must match the strings.
    let err = strings.add_strings_with_ids(["a", "b"], &[1]).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
}

#[test]
fn metric_space_kinds_refuse_what_they_cannot_serve() {
    let ctx = context();
    let status = |descriptor: &str, dim: usize, metric: Metric| {
        Index::new(&ctx, descriptor, dim, metric)
            .unwrap_err()
            .status
    };
    assert_eq!(status("LC8", 4, Metric::InnerProduct), Status::Unsupported);
    assert_eq!(status("SSS0.4", 4, Metric::Cosine), Status::Unsupported);
    assert_eq!(status("IVF4,Flat", 0, Metric::Edit), Status::Unsupported);
    assert_eq!(status("Flat", 4, Metric::Edit), Status::InvalidArgument); // strings have dim 0
    assert_eq!(status("LC0", 4, Metric::L1), Status::InvalidArgument);
    assert_eq!(status("SSS3", 4, Metric::L1), Status::InvalidArgument); // alpha in (0, 2]
}

#[test]
fn bad_offsets_through_the_raw_api_are_invalid_arguments() {
    // The safe API builds offsets itself; the C entry point still checks a caller's own.
    let mut index = Index::new(&context(), "LC8", 0, Metric::Edit).unwrap();
    let bytes = b"abcdef";
    for offsets in [[0i64, 4, 2], [-1, 2, 4], [0, 2, 1]] {
        // SAFETY: a live index, used alone (&mut); offsets holds n + 1 = 3 entries and bytes the 6
        // bytes they point into (the bad offsets are refused before any byte is read).
        let status = unsafe {
            quiver::sys::qv_index_add_strings(
                index.as_raw(),
                2,
                offsets.as_ptr(),
                bytes.as_ptr(),
                std::ptr::null(),
            )
        };
        assert_eq!(status, quiver::sys::QV_ERR_INVALID_ARGUMENT, "{offsets:?}");
    }
    index.add_strings(["ok"]).unwrap();
    assert_eq!(
        index.info().unwrap().count,
        1,
        "the bad calls added nothing"
    );
}

#[test]
fn index_kinds_of_metric_spaces_name_their_descriptors() {
    let kinds = [
        (IndexKind::ListOfClusters { cluster_size: 32 }, "LC32"),
        (
            IndexKind::Sss {
                alpha: 0.4,
                max_pivots: 0,
            },
            "SSS0.4",
        ),
        (
            IndexKind::Sss {
                alpha: 0.5,
                max_pivots: 32,
            },
            "SSS0.5,P32",
        ),
        (
            IndexKind::Sss {
                alpha: 2.0,
                max_pivots: 1,
            },
            "SSS2,P1",
        ),
    ];
    for (kind, descriptor) in kinds {
        assert_eq!(kind.descriptor(), descriptor);
        assert_eq!(kind.to_string(), descriptor);
        let index = Index::new(&context(), descriptor, 0, Metric::Edit).unwrap();
        assert_eq!(index.info().unwrap().descriptor, descriptor);
        Index::new(&context(), &kind.descriptor(), 3, Metric::L1).unwrap();
    }
    let set: HashSet<IndexKind> = kinds.iter().map(|(k, _)| *k).collect();
    assert_eq!(set.len(), 4);
    assert_eq!(
        IndexKind::Sss {
            alpha: 0.4,
            max_pivots: 0
        },
        IndexKind::Sss {
            alpha: 0.4,
            max_pivots: 0
        }
    );
    assert_ne!(
        IndexKind::Sss {
            alpha: 0.4,
            max_pivots: 0
        },
        IndexKind::Sss {
            alpha: 0.4,
            max_pivots: 64
        }
    );
    assert_ne!(
        IndexKind::ListOfClusters { cluster_size: 1 },
        IndexKind::IvfFlat { nlist: 1 }
    );
}
