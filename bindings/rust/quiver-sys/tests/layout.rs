//! The declarations mirror quiver.h: struct sizes, field offsets and constants are compared with
//! what a C compiler makes of the header (skipped, with a note, when no `cc` is installed), and the
//! library answers the simplest calls.

use std::mem::{offset_of, size_of};
use std::process::Command;

use quiver_sys::*;

/// Lines `name value`, one per struct size, field offset and constant, in a fixed order.
macro_rules! describe {
    ($( $ty:ident { $($field:ident),* } )* ; $($constant:ident),*) => {{
        let rust = vec![
            $(
                format!("sizeof({}) {}", stringify!($ty), size_of::<$ty>()),
                $( format!("offsetof({}, {}) {}", stringify!($ty), stringify!($field),
                           offset_of!($ty, $field)), )*
            )*
            $( format!("{} {}", stringify!($constant), $constant as i64), )*
        ];
        let c = vec![
            $(
                format!("printf(\"sizeof({}) %zu\\n\", sizeof({}));", stringify!($ty), stringify!($ty)),
                $( format!("printf(\"offsetof({}, {}) %zu\\n\", offsetof({}, {}));",
                           stringify!($ty), stringify!($field), stringify!($ty), stringify!($field)), )*
            )*
            $( format!("printf(\"{} %lld\\n\", (long long)({}));", stringify!($constant),
                       stringify!($constant)), )*
        ];
        (rust, c)
    }};
}

fn layouts() -> (Vec<String>, Vec<String>) {
    #[allow(unused_mut)]
    let (mut rust, mut c) = describe!(
        qv_context_options_t {
            struct_size, device, device_id, cpu_threads, device_count, device_ids
        }
        qv_search_params_t {
            struct_size, filter, filter_bits, nprobe, search_width, compute_mode, refine_factor,
            max_range_results, graph_visited, graph_probes, graph_warps_per_query,
            graph_queries_per_warp
        }
        qv_index_info_t {
            struct_size, dim, metric, is_trained, count, device, device_id, host_bytes,
            device_bytes, descriptor
        }
        qv_kmeans_params_t { struct_size, iterations, seed, max_points_per_centroid, progress, user_data }
        qv_knn_graph_params_t {
            struct_size, method, target_recall, seed, recall_sample, progress, user_data
        }
        ;
        QV_OK, QV_ERR_INVALID_ARGUMENT, QV_ERR_OUT_OF_HOST_MEMORY, QV_ERR_OUT_OF_DEVICE_MEMORY,
        QV_ERR_CUDA, QV_ERR_NO_DEVICE, QV_ERR_NOT_TRAINED, QV_ERR_UNSUPPORTED, QV_ERR_IO,
        QV_ERR_CORRUPT_DATA, QV_ERR_VERSION_MISMATCH, QV_ERR_INTERNAL, QV_ERR_CANCELLED,
        QV_ERR_TOO_MANY_RESULTS, QV_ERR_REMOTE,
        QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE, QV_METRIC_L1, QV_METRIC_LINF,
        QV_METRIC_EDIT,
        QV_COMPUTE_FP32, QV_COMPUTE_TF32, QV_COMPUTE_FP16, QV_COMPUTE_BF16,
        QV_GRAPH_VISITED_DEFAULT, QV_GRAPH_VISITED_HASH_TABLE, QV_GRAPH_VISITED_BLOOM,
        QV_GRAPH_VISITED_CUCKOO, QV_GRAPH_MAX_PROBES, QV_GRAPH_MAX_WARPS_PER_QUERY,
        QV_DEVICE_AUTO, QV_DEVICE_CPU, QV_DEVICE_CUDA,
        QV_KNN_GRAPH_AUTO, QV_KNN_GRAPH_EXACT, QV_KNN_GRAPH_APPROXIMATE, QV_MAX_K, QV_NPROBE_DEFAULT,
        QV_MAX_DEVICES, QV_ALL_DEVICES,
        QV_VERSION_MAJOR, QV_VERSION_MINOR, QV_VERSION_PATCH, QV_VERSION_NUMBER, QV_ABI_VERSION
    );
    #[cfg(feature = "mpi")]
    {
        let (mpi_rust, mpi_c) = describe!(qv_dist_options_t { struct_size, root, timeout_ms } ;);
        rust.extend(mpi_rust);
        c.extend(mpi_c);
    }
    (rust, c)
}

/// The headers the C side of the comparison includes.
fn includes() -> &'static str {
    if cfg!(feature = "mpi") {
        "#include \"quiver/quiver.h\"\n#include \"quiver/quiver_mpi.h\"\n"
    } else {
        "#include \"quiver/quiver.h\"\n"
    }
}

#[test]
fn structs_and_constants_match_the_c_header() {
    let (rust, c_lines) = layouts();
    let (Some(include), Some(generated)) = (
        option_env!("QUIVER_SYS_INCLUDE"),
        option_env!("QUIVER_SYS_GENERATED_INCLUDE"),
    ) else {
        eprintln!("skipped: the generated quiver/version.h was not found at build time");
        return;
    };
    let dir = std::env::temp_dir().join(format!("quiver-sys-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("layout.c");
    let program = dir.join("layout");
    std::fs::write(
        &source,
        format!(
            "#include <stddef.h>\n#include <stdio.h>\n{}\
             int main(void) {{\n{}\nreturn 0;\n}}\n",
            includes(),
            c_lines.join("\n")
        ),
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let compiled = Command::new(&cc)
        .args(["-std=c99", "-I", include, "-I", generated, "-o"])
        .arg(&program)
        .arg(&source)
        .status();
    match compiled {
        Err(err) => {
            eprintln!("skipped: cannot run {cc}: {err}");
            return;
        }
        Ok(status) => assert!(status.success(), "{cc} failed on quiver.h"),
    }
    let output = Command::new(&program).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let c: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(rust, c);
}

#[test]
fn struct_sizes_on_64_bit_targets() {
    if size_of::<usize>() == 8 {
        assert_eq!(size_of::<qv_context_options_t>(), 276);
        assert_eq!(size_of::<qv_search_params_t>(), 64);
        assert_eq!(size_of::<qv_index_info_t>(), 184);
        assert_eq!(size_of::<qv_kmeans_params_t>(), 40);
        assert_eq!(size_of::<qv_knn_graph_params_t>(), 48);
    }
    #[cfg(feature = "mpi")]
    assert_eq!(size_of::<qv_dist_options_t>(), 12);
}

/// libquiver_mpi's calls that need no MPI: the options' defaults and its own error message.
#[cfg(feature = "mpi")]
#[test]
fn the_mpi_library_answers_without_mpi() {
    // SAFETY: valid pointers, or NULL where the header allows it.
    unsafe {
        let mut o: qv_dist_options_t = std::mem::zeroed();
        assert_eq!(
            qv_dist_options_init_sized(&mut o, size_of::<qv_dist_options_t>()),
            QV_OK
        );
        assert_eq!(o.struct_size as usize, size_of::<qv_dist_options_t>());
        assert_eq!((o.root, o.timeout_ms), (0, 60000));
        assert_eq!(
            qv_dist_options_init_sized(std::ptr::null_mut(), size_of::<qv_dist_options_t>()),
            QV_ERR_INVALID_ARGUMENT
        );
        let message = qv_dist_last_error_message();
        assert!(
            !message.is_null() && *message != 0,
            "a failure leaves a message"
        );
        // The unsized entry point of older programs writes the 48-byte first version, never more.
        let mut old: qv_search_params_t = std::mem::zeroed();
        old.graph_probes = 7;
        assert_eq!(qv_search_params_init(&mut old), QV_OK);
        assert_eq!((old.struct_size, old.graph_probes), (48, 7));
        qv_dist_index_free(std::ptr::null_mut());
    }
}

#[test]
fn the_linked_library_is_the_one_declared() {
    // SAFETY: calls without arguments or with valid pointers, as the header describes.
    unsafe {
        assert_eq!(qv_abi_version(), QV_ABI_VERSION);
        assert_eq!(qv_version(), QV_VERSION_NUMBER);
        let s = std::ffi::CStr::from_ptr(qv_version_string());
        assert_eq!(s.to_str().unwrap(), QV_VERSION_STRING);
        let mut p: qv_search_params_t = std::mem::zeroed();
        assert_eq!(
            qv_search_params_init_sized(&mut p, size_of::<qv_search_params_t>()),
            QV_OK
        );
        assert_eq!(p.struct_size as usize, size_of::<qv_search_params_t>());
        assert_eq!(p.nprobe, QV_NPROBE_DEFAULT);
        assert_eq!(p.refine_factor, 0);
        assert_eq!(p.max_range_results, 0);
        assert_eq!(p.graph_visited, QV_GRAPH_VISITED_DEFAULT);
        assert_eq!(
            (
                p.graph_probes,
                p.graph_warps_per_query,
                p.graph_queries_per_warp
            ),
            (0, 0, 0)
        );
        assert_eq!(
            qv_search_params_init_sized(std::ptr::null_mut(), size_of::<qv_search_params_t>()),
            QV_ERR_INVALID_ARGUMENT
        );
        let message = qv_last_error_message();
        assert!(
            !message.is_null() && *message != 0,
            "a failure leaves a message"
        );
        let mut o: qv_context_options_t = std::mem::zeroed();
        assert_eq!(
            qv_context_options_init_sized(&mut o, size_of::<qv_context_options_t>()),
            QV_OK
        );
        assert_eq!(o.struct_size as usize, size_of::<qv_context_options_t>());
        assert_eq!(o.device_count, 0);
        o.device = QV_DEVICE_CPU;
        let mut ctx = std::ptr::null_mut();
        assert_eq!(qv_context_create(&o, &mut ctx), QV_OK);
        let mut count = -1;
        assert_eq!(
            qv_context_devices(ctx, std::ptr::null_mut(), 0, &mut count),
            QV_OK
        );
        assert_eq!(count, 0, "a CPU context has no CUDA devices");
        assert_eq!(
            qv_context_devices(ctx, std::ptr::null_mut(), -1, &mut count),
            QV_ERR_INVALID_ARGUMENT
        );
        qv_context_free(ctx);
        let name = std::ffi::CStr::from_ptr(qv_status_string(QV_ERR_IO));
        assert_eq!(name.to_str().unwrap(), "QV_ERR_IO");
        qv_index_free(std::ptr::null_mut());
        qv_context_free(std::ptr::null_mut());
        qv_range_result_free(std::ptr::null_mut());
        qv_buffer_free(std::ptr::null_mut());
    }
}
