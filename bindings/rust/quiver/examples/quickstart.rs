//! The quick start: build an exact index, search it, range-search it, save and load it.
//!
//! Run with `cargo run --example quickstart` in bindings/rust.

use quiver::{Context, Index, Metric, SearchParams};

fn main() -> Result<(), quiver::Error> {
    println!(
        "quiver {} (ABI {})",
        quiver::version_string(),
        quiver::abi_version()
    );

    // Where work runs: a CUDA device if one is usable, else the CPU.
    let ctx = Context::new()?;
    println!("device: {:?}", ctx.device()?);

    // 1000 vectors of dimension 16, row-major, in an exact ("Flat") index.
    let dim = 16;
    let data: Vec<f32> = (0..1000 * dim).map(|i| (i as f32 * 0.618).sin()).collect();
    let mut index = Index::new(&ctx, "Flat", dim, Metric::L2)?;
    index.add(&data)?;

    // The 5 nearest neighbours of the first two vectors, closest first.
    let found = index.search(&data[..2 * dim], 5, &SearchParams::default())?;
    for (query, hits) in found.iter().enumerate() {
        println!(
            "query {query}: ids {:?} distances {:?}",
            hits.ids, hits.distances
        );
    }

    // Every vector within squared distance 0.5 of the first one.
    let near = index.range_search(&data[..dim], 0.5, &SearchParams::default())?;
    println!(
        "{} vectors within 0.5 of vector 0: {:?}",
        near.len(),
        near.ids()
    );

    // Save and load, here through memory.
    let bytes = index.save_to_buffer()?;
    let loaded = Index::load_from_buffer(&ctx, &bytes)?;
    println!("saved {} bytes; loaded {:?}", bytes.len(), loaded.info()?);
    Ok(())
}
