//! Finds or builds libquiver.a and tells cargo how to link it.
//!
//! - `QUIVER_LIB_DIR` set: a quiver cmake build directory with `libquiver.a` at its top (an install
//!   prefix's lib directory works too when it holds `quiver_link.txt`).
//! - otherwise: configures and builds this repository with cmake under `$OUT_DIR/build`
//!   (`QUIVER_CUDA=AUTO|ON|OFF` is passed on when set; `CMAKE` names the cmake program).
//!
//! With the feature `mpi` (the distributed index, `include/quiver/quiver_mpi.h`), the same directory
//! must hold `libquiver_mpi.so` and `libquiver.so`, and both are linked as shared libraries:
//! `libquiver_mpi.so` calls `libquiver.so`, so the program must use that one copy of the library, not
//! a second one from `libquiver.a`. The shared libraries bring their own dependencies (OpenBLAS,
//! CUDA); `libmpi` is linked from Open MPI's library directory (`QUIVER_MPI_LIB_DIR`, else
//! `mpicc --showme:libdirs`, else `pkg-config --libs-only-L ompi-c`, else
//! `/usr/lib/x86_64-linux-gnu/openmpi/lib`), and both directories go on the rpath.
//!
//! The libraries libquiver.a needs are read from `quiver_link.txt` in that directory (one linker
//! argument per line) when it exists, else from its `CMakeCache.txt` (OpenBLAS, and the CUDA runtime
//! and cuBLAS when the build has CUDA). Run-time search paths (rpath) cannot reach dependent crates
//! through `rustc-link-arg`, so they are also published as metadata (`DEP_QUIVER_RPATH`,
//! `DEP_QUIVER_LINK_ARGS`), which the `quiver` crate's build script turns into link arguments.

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The QV_ABI_VERSION these declarations were written for.
const ABI_VERSION: u32 = 1;

/// Separates the entries of the `link_args` metadata (a linker argument may contain spaces).
const ARG_SEPARATOR: char = '\u{1f}';

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=QUIVER_LIB_DIR");
    println!("cargo:rerun-if-env-changed=QUIVER_CUDA");
    println!("cargo:rerun-if-env-changed=CMAKE");
    println!("cargo:rerun-if-env-changed=QUIVER_MPI_LIB_DIR");
    let mpi = env::var_os("CARGO_FEATURE_MPI").is_some();

    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let repo = manifest_dir.join("../../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    let header = repo.join("include/quiver/quiver.h");
    watch(&header);

    let lib_dir = match env::var_os("QUIVER_LIB_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_relative() {
                // Cargo runs build scripts in the package directory, not where cargo was started.
                fail(&format!(
                    "QUIVER_LIB_DIR must be an absolute path, not {}",
                    dir.display()
                ));
            }
            let dir = dir.canonicalize().unwrap_or(dir);
            for name in [
                "libquiver.a",
                "libquiver.so",
                "libquiver_mpi.so",
                "quiver_link.txt",
                "CMakeCache.txt",
            ] {
                watch(&dir.join(name));
            }
            dir
        }
        None => {
            for name in ["include", "cpp", "capi", "cuda", "cmake", "CMakeLists.txt"] {
                watch(&repo.join(name));
            }
            build_with_cmake(&repo, &out_dir, mpi)
        }
    };
    let link = if mpi {
        for name in ["libquiver.so", "libquiver_mpi.so"] {
            if !lib_dir.join(name).exists() {
                fail(&format!(
                    "{} has no {name}, which the feature `mpi` links; build quiver with MPI \
                     (Open MPI installed, QUIVER_MPI=AUTO or ON) and its targets quiver and \
                     quiver_mpi (cmake --build <dir> --target quiver quiver_mpi)",
                    lib_dir.display()
                ));
            }
        }
        mpi_link_plan(&lib_dir)
    } else {
        if !lib_dir.join("libquiver.a").is_file() {
            fail(&format!(
                "{} has no libquiver.a; set QUIVER_LIB_DIR to a quiver cmake build directory \
                 (cmake --build <dir> --target quiver_static), or unset it to build with cmake",
                lib_dir.display()
            ));
        }
        link_plan(&lib_dir)
    };
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    if !mpi {
        println!("cargo:rustc-link-lib=static=quiver");
    }
    for dir in &link.search {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in &link.libs {
        println!("cargo:rustc-link-lib={lib}");
    }
    for dir in &link.rpaths {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    for arg in &link.args {
        println!("cargo:rustc-link-arg={arg}");
    }
    let rpaths: Vec<String> = link
        .rpaths
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    println!("cargo:rpath={}", rpaths.join(":"));
    println!(
        "cargo:link_args={}",
        link.args.join(&ARG_SEPARATOR.to_string())
    );
    println!("cargo:lib_dir={}", lib_dir.display());

    write_version(&repo, &lib_dir, &out_dir);
}

/// What the final link needs besides libquiver.a itself.
#[derive(Default)]
struct LinkPlan {
    search: Vec<PathBuf>,
    /// `rustc-link-lib` values, in link order: `name`, `static:-bundle=name`, ...
    libs: Vec<String>,
    rpaths: Vec<PathBuf>,
    /// Other linker arguments, passed through unchanged.
    args: Vec<String>,
}

impl LinkPlan {
    fn search(&mut self, dir: &Path) {
        if !self.search.iter().any(|d| d == dir) {
            self.search.push(dir.to_path_buf());
        }
    }
    fn lib(&mut self, lib: &str) {
        if !self.libs.iter().any(|l| l == lib) {
            self.libs.push(lib.to_string());
        }
    }
    fn rpath(&mut self, dir: &Path) {
        if !self.rpaths.iter().any(|d| d == dir) {
            self.rpaths.push(dir.to_path_buf());
        }
    }
    fn arg(&mut self, arg: &str) {
        if !self.args.iter().any(|a| a == arg) {
            self.args.push(arg.to_string());
        }
    }

    /// A library given by its file path: its directory is searched (and put on the rpath when the
    /// library is shared), and it is linked by name.
    fn library_file(&mut self, path: &Path) {
        let dir = path.parent().unwrap_or(Path::new("/"));
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        let stem = file.strip_prefix("lib");
        if let Some(name) = stem.and_then(|s| s.strip_suffix(".a")) {
            self.search(dir);
            self.lib(&format!("static:-bundle={name}"));
        } else if let Some(name) = stem.and_then(|s| s.strip_suffix(".so")) {
            self.search(dir);
            self.rpath(dir);
            self.lib(name);
        } else {
            // A versioned soname (libfoo.so.1) or an odd name: pass the path to the linker as is.
            self.rpath(dir);
            self.arg(&path.display().to_string());
        }
    }

    /// One line of quiver_link.txt: a linker argument as the C compiler driver takes it.
    fn linker_argument(&mut self, arg: &str) {
        if let Some(dir) = arg.strip_prefix("-L") {
            if !dir.is_empty() {
                self.search(Path::new(dir));
            }
        } else if let Some(name) = arg.strip_prefix("-l") {
            if name.starts_with(':') || name.is_empty() {
                self.arg(arg);
            } else {
                self.lib(name);
            }
        } else if let Some(dir) = arg
            .strip_prefix("-Wl,-rpath,")
            .or_else(|| arg.strip_prefix("-Wl,-rpath="))
            .or_else(|| arg.strip_prefix("-Wl,-R,"))
        {
            for d in dir.split(':').filter(|d| !d.is_empty()) {
                self.rpath(Path::new(d));
            }
        } else if arg.starts_with('/') && Path::new(arg).is_file() {
            self.library_file(Path::new(arg));
        } else {
            self.arg(arg);
        }
    }

    /// The libraries every build needs, last on the line: libquiver.a is C++.
    fn system_libraries(&mut self) {
        for lib in ["stdc++", "m", "pthread", "dl"] {
            self.lib(lib);
        }
    }
}

fn link_plan(lib_dir: &Path) -> LinkPlan {
    let mut plan = LinkPlan::default();
    let link_file = lib_dir.join("quiver_link.txt");
    if let Ok(text) = fs::read_to_string(&link_file) {
        for line in text.lines().map(str::trim) {
            if !line.is_empty() && !line.starts_with('#') {
                plan.linker_argument(line);
            }
        }
        plan.system_libraries();
        return plan;
    }

    let cache = read_cmake_cache(&lib_dir.join("CMakeCache.txt"));
    if cache.is_empty() {
        println!(
            "cargo:warning=quiver-sys: {} has neither quiver_link.txt nor CMakeCache.txt; \
             linking OpenBLAS by name and no CUDA libraries",
            lib_dir.display()
        );
        plan.lib("openblas");
        plan.system_libraries();
        return plan;
    }

    if cuda_enabled(&cache) {
        let dir = cuda_library_dir(&cache);
        plan.search(&dir);
        plan.rpath(&dir);
        for lib in [
            "cublas",
            "cublasLt",
            "static:-bundle=cudart_static",
            "rt",
            "dl",
        ] {
            plan.lib(lib);
        }
    }
    match cache.get("QUIVER_OPENBLAS_LIBRARY").filter(|v| is_set(v)) {
        Some(path) => plan.library_file(Path::new(path)),
        None => plan.lib("openblas"),
    }
    plan.system_libraries();
    plan
}

/// The feature `mpi`: the shared libquiver_mpi.so and libquiver.so (one copy of the library for the
/// program and for libquiver_mpi), then libmpi. The shared libraries name their own dependencies; the
/// directories of libquiver.a's (OpenBLAS, CUDA) stay on the rpath in case their RUNPATH lacks them.
fn mpi_link_plan(lib_dir: &Path) -> LinkPlan {
    let mut plan = LinkPlan::default();
    plan.rpath(lib_dir);
    plan.lib("dylib=quiver_mpi");
    plan.lib("dylib=quiver");
    for dir in mpi_library_dirs() {
        plan.search(&dir);
        plan.rpath(&dir);
    }
    plan.lib("dylib=mpi");
    for dir in link_plan(lib_dir).rpaths {
        plan.rpath(&dir);
    }
    plan
}

/// Open MPI's library directories: `QUIVER_MPI_LIB_DIR`, else what `mpicc --showme:libdirs` or
/// `pkg-config --libs-only-L ompi-c` says, else Debian's and Ubuntu's directory.
fn mpi_library_dirs() -> Vec<PathBuf> {
    if let Some(dir) = env::var_os("QUIVER_MPI_LIB_DIR").filter(|v| !v.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    let output = |program: &str, args: &[&str]| -> Option<String> {
        let out = Command::new(program)
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    if let Some(text) = output("mpicc", &["--showme:libdirs"]) {
        let dirs: Vec<PathBuf> = text.split_whitespace().map(PathBuf::from).collect();
        if !dirs.is_empty() {
            return dirs;
        }
    }
    if let Some(text) = output("pkg-config", &["--libs-only-L", "ompi-c"]) {
        let dirs: Vec<PathBuf> = text
            .split_whitespace()
            .filter_map(|arg| arg.strip_prefix("-L"))
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .collect();
        if !dirs.is_empty() {
            return dirs;
        }
    }
    vec![PathBuf::from("/usr/lib/x86_64-linux-gnu/openmpi/lib")]
}

/// `KEY:TYPE=VALUE` entries of a CMakeCache.txt (empty when the file cannot be read).
fn read_cmake_cache(path: &Path) -> BTreeMap<String, String> {
    let mut cache = BTreeMap::new();
    let Ok(text) = fs::read_to_string(path) else {
        return cache;
    };
    for line in text.lines() {
        if line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        if let Some((key_type, value)) = line.split_once('=') {
            let key = key_type.split_once(':').map_or(key_type, |(k, _)| k);
            cache.insert(key.to_string(), value.to_string());
        }
    }
    cache
}

/// A cache value that names something (not empty, not `...-NOTFOUND`, not OFF).
fn is_set(value: &str) -> bool {
    let v = value.trim();
    !v.is_empty() && !v.ends_with("NOTFOUND") && !v.eq_ignore_ascii_case("OFF")
}

/// The build has the CUDA backend: QUIVER_CUDA is not OFF and a CUDA compiler was found.
fn cuda_enabled(cache: &BTreeMap<String, String>) -> bool {
    let requested = cache
        .get("QUIVER_CUDA")
        .map_or(true, |v| !v.eq_ignore_ascii_case("OFF"));
    requested && cache.get("CMAKE_CUDA_COMPILER").is_some_and(|v| is_set(v))
}

/// Where libcudart_static.a and libcublas.so are: the toolkit's library directory.
fn cuda_library_dir(cache: &BTreeMap<String, String>) -> PathBuf {
    if let Some(dir) = cache.get("CUDAToolkit_LIBRARY_DIR").filter(|v| is_set(v)) {
        return PathBuf::from(dir);
    }
    for key in [
        "CUDA_cudart_static_LIBRARY",
        "CUDA_cublas_LIBRARY",
        "CUDA_CUDART",
    ] {
        if let Some(parent) = cache
            .get(key)
            .filter(|v| is_set(v))
            .and_then(|v| Path::new(v).parent())
        {
            return parent.to_path_buf();
        }
    }
    if let Some(root) = cache
        .get("CMAKE_CUDA_COMPILER")
        .and_then(|nvcc| Path::new(nvcc).parent())
        .and_then(Path::parent)
    {
        if root.join("lib64").is_dir() {
            return root.join("lib64");
        }
    }
    PathBuf::from("/usr/local/cuda/lib64")
}

fn build_with_cmake(repo: &Path, out_dir: &Path, mpi: bool) -> PathBuf {
    let build = out_dir.join("build");
    let cmake = env::var_os("CMAKE").unwrap_or_else(|| "cmake".into());
    let mut configure = Command::new(&cmake);
    configure
        .arg("-S")
        .arg(repo)
        .arg("-B")
        .arg(&build)
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .arg("-DQUIVER_BUILD_TESTS=OFF")
        .arg("-DQUIVER_BUILD_TOOLS=OFF");
    if let Some(cuda) = env::var("QUIVER_CUDA").ok().filter(|v| !v.is_empty()) {
        configure.arg(format!("-DQUIVER_CUDA={cuda}"));
    }
    if mpi {
        configure.arg("-DQUIVER_MPI=ON");
    }
    run(&mut configure, "configure");

    // NUM_JOBS is cargo's -j; a bare `-j` would let make start unlimited compilers.
    let jobs = env::var("NUM_JOBS")
        .ok()
        .filter(|j| j.parse::<u32>().is_ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .to_string()
        });
    let mut compile = Command::new(&cmake);
    compile
        .arg("--build")
        .arg(&build)
        .args(["--target", "quiver_static"]);
    if mpi {
        compile.args(["quiver", "quiver_mpi"]);
    }
    compile.args(["--parallel", &jobs]);
    run(&mut compile, "build");
    build
}

/// Runs a cmake step with its output on stderr (cargo reads build-script stdout as directives).
fn run(cmd: &mut Command, step: &str) {
    cmd.stdout(Stdio::from(std::io::stderr()));
    match cmd.status() {
        Ok(status) if status.success() => {}
        Ok(status) => fail(&format!("cmake {step} failed ({status}): {cmd:?}")),
        Err(err) => fail(&format!(
            "cannot run cmake ({err}): install cmake, or set QUIVER_LIB_DIR to a quiver build \
             directory: {cmd:?}"
        )),
    }
}

/// Writes `$OUT_DIR/version.rs` from the generated quiver/version.h beside the library (falling back
/// to the repository's CMakeLists.txt), and fails on an ABI this crate was not written for.
fn write_version(repo: &Path, lib_dir: &Path, out_dir: &Path) {
    let candidates = [lib_dir.join("include"), lib_dir.join("../include")];
    let generated = candidates
        .iter()
        .find(|d| d.join("quiver/version.h").is_file());
    let (major, minor, patch, abi) = match generated {
        Some(dir) => {
            let text = fs::read_to_string(dir.join("quiver/version.h")).unwrap_or_default();
            let define = |name: &str| -> u32 {
                text.lines()
                    .filter_map(|l| l.trim().strip_prefix("#define "))
                    .filter_map(|l| l.trim().strip_prefix(name))
                    .filter_map(|v| v.trim().parse().ok())
                    .next()
                    .unwrap_or_else(|| fail(&format!("{name} not found in {}", dir.display())))
            };
            println!("cargo:generated_include={}", dir.display());
            println!(
                "cargo:rustc-env=QUIVER_SYS_GENERATED_INCLUDE={}",
                dir.display()
            );
            (
                define("QV_VERSION_MAJOR"),
                define("QV_VERSION_MINOR"),
                define("QV_VERSION_PATCH"),
                define("QV_ABI_VERSION"),
            )
        }
        None => version_from_cmakelists(&repo.join("CMakeLists.txt")),
    };
    println!("cargo:include={}", repo.join("include").display());
    println!(
        "cargo:rustc-env=QUIVER_SYS_INCLUDE={}",
        repo.join("include").display()
    );
    if abi != ABI_VERSION {
        fail(&format!(
            "the linked quiver has QV_ABI_VERSION {abi}; quiver-sys declares ABI {ABI_VERSION}: \
             update bindings/rust/quiver-sys for the new ABI"
        ));
    }
    let number = major * 10000 + minor * 100 + patch;
    let code = format!(
        "/// `QV_VERSION_MAJOR` of the headers the library was built with.\n\
         pub const QV_VERSION_MAJOR: u32 = {major};\n\
         /// `QV_VERSION_MINOR` of the headers the library was built with.\n\
         pub const QV_VERSION_MINOR: u32 = {minor};\n\
         /// `QV_VERSION_PATCH` of the headers the library was built with.\n\
         pub const QV_VERSION_PATCH: u32 = {patch};\n\
         /// `QV_VERSION_STRING`: \"MAJOR.MINOR.PATCH\".\n\
         pub const QV_VERSION_STRING: &str = \"{major}.{minor}.{patch}\";\n\
         /// `QV_VERSION_NUMBER`: major * 10000 + minor * 100 + patch.\n\
         pub const QV_VERSION_NUMBER: u32 = {number};\n\
         /// `QV_ABI_VERSION`: bumped only on a breaking change of the C ABI.\n\
         pub const QV_ABI_VERSION: u32 = {abi};\n"
    );
    fs::write(out_dir.join("version.rs"), code)
        .unwrap_or_else(|e| fail(&format!("version.rs: {e}")));
}

/// `project(quiver VERSION x.y.z ...)` and `set(QUIVER_ABI_VERSION n)`.
fn version_from_cmakelists(path: &Path) -> (u32, u32, u32, u32) {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    let version = text
        .split("project(")
        .nth(1)
        .and_then(|rest| rest.split("VERSION").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("0.0.0");
    let mut parts = version
        .trim_end_matches(')')
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let abi = text
        .split("set(QUIVER_ABI_VERSION")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(ABI_VERSION);
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        abi,
    )
}

/// Reruns the build script when `path` changes; only for paths that exist (a missing one would rerun
/// it on every build).
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: quiver-sys: {message}");
    std::process::exit(1);
}
