//! One index over every GPU of the machine: "Sharded,<kind>" splits the vectors among the GPUs and
//! merges each query's results on them; "Replicated,<kind>" keeps a full copy on each GPU and splits
//! a batch of queries among the copies. A saved composite loads into a context of any device count.
//! Without a GPU the context falls back to the CPU, where "Sharded4,..." gives four logical shards.
//!
//! Run with `cargo run --example multi_gpu` in bindings/rust.

use quiver::{Context, Index, Metric, SearchParams};

fn main() -> Result<(), quiver::Error> {
    let gpus = quiver::cuda_device_count()?;
    let every = Context::builder().all_devices().build()?;
    println!(
        "{gpus} GPU(s); the context's devices: {:?}",
        every.devices()?
    );

    // Data of our own: 20 000 vectors of dimension 32 (xorshift), ids spaced by 3.
    let (dim, n, nq, k) = (32, 20_000, 200, 10);
    let mut state = 2_463_534_242u32;
    let data: Vec<f32> = (0..n * dim)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1 << 24) as f32
        })
        .collect();
    let ids: Vec<i64> = (0..n as i64).map(|i| 5_000_000 + 3 * i).collect();
    let queries = &data[..nq * dim];

    // The reference: one exact index on the first device.
    let mut flat = Index::new(&every, "Flat", dim, Metric::L2)?;
    flat.add_with_ids(&data, &ids)?;
    let want = flat.search(queries, k, &SearchParams::default())?;

    // Sharded: each device holds a share of the vectors; ids stay ours.
    let descriptor = if gpus > 0 {
        "Sharded,Flat"
    } else {
        "Sharded4,Flat"
    };
    let mut sharded = Index::new(&every, descriptor, dim, Metric::L2)?;
    sharded.add_with_ids(&data, &ids)?;
    let got = sharded.search(queries, k, &SearchParams::default())?;
    println!(
        "{descriptor}: {:?}; same neighbours as Flat: {}",
        sharded.info()?,
        got.ids() == want.ids()
    );

    // Replicated: a full copy on each device, trained once; batches are split among the copies.
    let mut replicated = Index::new(&every, "Replicated,IVF64,Flat", dim, Metric::L2)?;
    replicated.train(&data)?;
    replicated.add_with_ids(&data, &ids)?;
    let approx = replicated.search(queries, k, &SearchParams::default().with_nprobe(32))?;
    let hits: usize = approx
        .iter()
        .zip(want.iter())
        .map(|(a, w)| a.ids.iter().filter(|id| w.ids.contains(id)).count())
        .sum();
    println!(
        "Replicated,IVF64,Flat at nprobe 32: {hits} of the {} exact neighbours",
        want.ids().len()
    );

    // Saved, then loaded into a context of the first device alone.
    let bytes = sharded.save_to_buffer()?;
    let one = Context::new()?;
    let reloaded = Index::load_from_buffer(&one, &bytes)?;
    let again = reloaded.search(queries, k, &SearchParams::default())?;
    println!(
        "saved {} bytes, loaded on one device: same neighbours: {}",
        bytes.len(),
        again.ids() == want.ids()
    );
    Ok(())
}
