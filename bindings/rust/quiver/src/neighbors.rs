//! `Neighbors` (k-NN results) and `Hits` (the results of one query).

/// The results of one query: ids and distances, closest first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hits<'a> {
    /// The ids found; -1 pads a k-NN row where fewer than k vectors qualify.
    pub ids: &'a [i64],
    /// Their distances or similarities, in the metric's units (+INF / -INF on padding).
    pub distances: &'a [f32],
}

impl<'a> Hits<'a> {
    /// The number of entries (padding included).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// `(id, distance)` pairs, closest first, padding (id -1) left out.
    pub fn iter(&self) -> impl Iterator<Item = (i64, f32)> + 'a {
        self.ids
            .iter()
            .copied()
            .zip(self.distances.iter().copied())
            .filter(|&(id, _)| id >= 0)
    }
}

/// The k nearest neighbours of `nq` queries: two row-major `nq x k` arrays.
///
/// Row `i` holds the neighbours of query `i`, closest first; where fewer than `k` vectors qualify the
/// row is padded with id -1 and distance +INFINITY (the distances: L2, L1, L-infinity, edit) or
/// -INFINITY (the similarities: inner product, cosine).
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbors {
    nq: usize,
    k: usize,
    distances: Vec<f32>,
    ids: Vec<i64>,
}

impl Neighbors {
    pub(crate) fn new(nq: usize, k: usize, distances: Vec<f32>, ids: Vec<i64>) -> Neighbors {
        debug_assert!(distances.len() == nq * k && ids.len() == nq * k);
        Neighbors {
            nq,
            k,
            distances,
            ids,
        }
    }

    /// The number of queries.
    pub fn nq(&self) -> usize {
        self.nq
    }

    /// Neighbours per query.
    pub fn k(&self) -> usize {
        self.k
    }

    /// All ids, `nq x k` row-major.
    pub fn ids(&self) -> &[i64] {
        &self.ids
    }

    /// All distances, `nq x k` row-major.
    pub fn distances(&self) -> &[f32] {
        &self.distances
    }

    /// The neighbours of query `i`, or `None` if `i >= nq`.
    pub fn get(&self, i: usize) -> Option<Hits<'_>> {
        if i >= self.nq {
            return None;
        }
        let row = i * self.k..(i + 1) * self.k;
        Some(Hits {
            ids: &self.ids[row.clone()],
            distances: &self.distances[row],
        })
    }

    /// The neighbours of each query, in order.
    pub fn iter(&self) -> impl Iterator<Item = Hits<'_>> + '_ {
        (0..self.nq).filter_map(move |i| self.get(i))
    }

    /// The two arrays, `(distances, ids)`, each `nq x k` row-major.
    pub fn into_parts(self) -> (Vec<f32>, Vec<i64>) {
        (self.distances, self.ids)
    }
}
