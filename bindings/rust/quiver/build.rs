//! Passes on the run-time search paths (rpath) and linker arguments that quiver-sys found: cargo
//! applies a build script's `rustc-link-arg` to its own package only, so quiver-sys publishes them as
//! metadata (`links = "quiver"`) and each package that links an executable re-emits them. A crate of
//! your own that links quiver can do the same, or set LD_LIBRARY_PATH.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_QUIVER_RPATH");
    println!("cargo:rerun-if-env-changed=DEP_QUIVER_LINK_ARGS");
    if let Ok(rpath) = std::env::var("DEP_QUIVER_RPATH") {
        for dir in rpath.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
    if let Ok(args) = std::env::var("DEP_QUIVER_LINK_ARGS") {
        for arg in args.split('\u{1f}').filter(|a| !a.is_empty()) {
            println!("cargo:rustc-link-arg={arg}");
        }
    }
}
