//! Versions, status names, contexts and devices.

mod common;

use quiver::{Context, DeviceKind, Error, Index, Metric, Status};

#[test]
fn version_matches_the_headers_built_against() {
    let v = quiver::version();
    assert_eq!(v.number(), quiver::sys::QV_VERSION_NUMBER);
    assert_eq!(quiver::version_string(), quiver::sys::QV_VERSION_STRING);
    assert_eq!(v.to_string(), quiver::version_string());
    assert_eq!(quiver::abi_version(), quiver::ABI_VERSION);
    assert_eq!(quiver::MAX_K, 2048);
}

#[test]
fn status_codes_round_trip_and_have_c_names() {
    let all = [
        (Status::Ok, "QV_OK"),
        (Status::InvalidArgument, "QV_ERR_INVALID_ARGUMENT"),
        (Status::OutOfHostMemory, "QV_ERR_OUT_OF_HOST_MEMORY"),
        (Status::OutOfDeviceMemory, "QV_ERR_OUT_OF_DEVICE_MEMORY"),
        (Status::Cuda, "QV_ERR_CUDA"),
        (Status::NoDevice, "QV_ERR_NO_DEVICE"),
        (Status::NotTrained, "QV_ERR_NOT_TRAINED"),
        (Status::Unsupported, "QV_ERR_UNSUPPORTED"),
        (Status::Io, "QV_ERR_IO"),
        (Status::CorruptData, "QV_ERR_CORRUPT_DATA"),
        (Status::VersionMismatch, "QV_ERR_VERSION_MISMATCH"),
        (Status::Internal, "QV_ERR_INTERNAL"),
        (Status::Cancelled, "QV_ERR_CANCELLED"),
        (Status::TooManyResults, "QV_ERR_TOO_MANY_RESULTS"),
        (Status::Remote, "QV_ERR_REMOTE"),
    ];
    for (code, (status, name)) in all.iter().enumerate() {
        assert_eq!(status.code(), code as i32);
        assert_eq!(Status::from_code(code as i32), *status);
        assert_eq!(status.name(), *name);
        assert_eq!(status.to_string(), *name);
    }
    assert_eq!(Status::from_code(12345), Status::Unknown);
    assert_eq!(Status::Unknown.name(), "QV_ERR_UNKNOWN");
}

#[test]
fn metric_and_device_codes_match_the_header() {
    assert_eq!(Metric::L2.code(), quiver::sys::QV_METRIC_L2);
    assert_eq!(
        Metric::InnerProduct.code(),
        quiver::sys::QV_METRIC_INNER_PRODUCT
    );
    assert_eq!(Metric::Cosine.code(), quiver::sys::QV_METRIC_COSINE);
    assert_eq!(Metric::L1.code(), quiver::sys::QV_METRIC_L1);
    assert_eq!(Metric::LInf.code(), quiver::sys::QV_METRIC_LINF);
    assert_eq!(Metric::Edit.code(), quiver::sys::QV_METRIC_EDIT);
    let all = [
        Metric::L2,
        Metric::InnerProduct,
        Metric::Cosine,
        Metric::L1,
        Metric::LInf,
        Metric::Edit,
    ];
    for m in all {
        assert_eq!(Metric::from_code(m.code()).unwrap(), m);
        assert_eq!(m.holds_strings(), m == Metric::Edit);
    }
    assert_eq!(Metric::from_code(99).unwrap_err().status, Status::Internal);
    assert!(!Metric::L2.larger_is_closer() && Metric::Cosine.larger_is_closer());
    assert!(!Metric::L1.larger_is_closer() && !Metric::LInf.larger_is_closer());
    assert!(!Metric::Edit.larger_is_closer() && Metric::InnerProduct.larger_is_closer());
    for d in [DeviceKind::Auto, DeviceKind::Cpu, DeviceKind::Cuda] {
        assert_eq!(DeviceKind::from_code(d.code()).unwrap(), d);
    }
}

#[test]
fn cpu_context_resolves_to_the_cpu() {
    let ctx = Context::builder()
        .device(DeviceKind::Cpu)
        .cpu_threads(3)
        .build()
        .unwrap();
    let device = ctx.device().unwrap();
    assert_eq!(device.kind, DeviceKind::Cpu);
    assert_eq!(device.cuda_id, None);
}

#[test]
fn auto_context_resolves_to_a_real_device() {
    let ctx = Context::new().unwrap();
    let device = ctx.device().unwrap();
    let gpus = quiver::cuda_device_count().unwrap();
    if gpus == 0 {
        assert_eq!(device.kind, DeviceKind::Cpu);
    } else {
        assert_eq!(device.kind, DeviceKind::Cuda);
        assert_eq!(device.cuda_id, Some(0));
    }
}

#[test]
fn cuda_context_without_a_gpu_is_no_device() {
    let gpus = quiver::cuda_device_count().unwrap();
    let result = Context::builder()
        .device(DeviceKind::Cuda)
        .device_id(gpus as u32)
        .build();
    let err = result.expect_err("a CUDA ordinal past the last device");
    assert!(
        matches!(err.status, Status::NoDevice | Status::InvalidArgument),
        "unexpected status {err}"
    );
    assert!(!err.message.is_empty());
    if gpus == 0 {
        let err = Context::builder()
            .device(DeviceKind::Cuda)
            .build()
            .unwrap_err();
        assert_eq!(err.status, Status::NoDevice, "{err}");
        assert!(!err.message.is_empty());
    }
}

#[test]
fn context_options_out_of_range_are_refused_in_rust() {
    let err = Context::builder()
        .cpu_threads(usize::MAX)
        .build()
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert!(err.message.contains("cpu_threads"), "{err}");
    let err = Context::builder().device_id(u32::MAX).build().unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
}

#[test]
fn a_cpu_context_has_no_cuda_devices() {
    let ctx = Context::builder()
        .device(DeviceKind::Cpu)
        .cpu_threads(2)
        .build()
        .unwrap();
    assert_eq!(ctx.devices().unwrap(), Vec::<i32>::new());
    // An empty list is device_id alone, which the CPU accepts.
    let ctx = Context::builder()
        .device(DeviceKind::Cpu)
        .devices(&[])
        .build()
        .unwrap();
    assert_eq!(ctx.devices().unwrap(), Vec::<i32>::new());
}

#[test]
fn the_default_context_lists_its_one_device() {
    let ctx = Context::new().unwrap();
    let device = ctx.device().unwrap();
    let devices = ctx.devices().unwrap();
    match device.kind {
        DeviceKind::Cuda => assert_eq!(devices, vec![device.cuda_id.unwrap() as i32]),
        _ => assert!(devices.is_empty(), "{devices:?}"),
    }
}

#[test]
fn device_ids_with_the_cpu_kind_are_invalid() {
    for builder in [
        Context::builder().device(DeviceKind::Cpu).devices(&[0]),
        Context::builder().device(DeviceKind::Cpu).devices(&[0, 0]),
        Context::builder().device(DeviceKind::Cpu).all_devices(),
    ] {
        let err = builder.build().unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument, "{err}");
        assert!(!err.message.is_empty());
    }
}

#[test]
fn auto_with_device_ids_falls_back_to_the_cpu_without_a_gpu() {
    let gpus = quiver::cuda_device_count().unwrap();
    let pair = Context::builder().devices(&[0, 0]).build().unwrap();
    let all = Context::builder().all_devices().build().unwrap();
    if gpus == 0 {
        for ctx in [&pair, &all] {
            assert_eq!(ctx.device().unwrap().kind, DeviceKind::Cpu);
            assert_eq!(ctx.devices().unwrap(), Vec::<i32>::new());
        }
        // CUDA asked for explicitly has no such fallback.
        for builder in [
            Context::builder().device(DeviceKind::Cuda).devices(&[0]),
            Context::builder().device(DeviceKind::Cuda).all_devices(),
        ] {
            let err = builder.build().unwrap_err();
            assert_eq!(err.status, Status::NoDevice, "{err}");
        }
    } else {
        // A repeated ordinal is two logical devices on one GPU.
        assert_eq!(pair.devices().unwrap(), vec![0, 0]);
        let first = pair.device().unwrap();
        assert_eq!((first.kind, first.cuda_id), (DeviceKind::Cuda, Some(0)));
        let every: Vec<i32> = (0..gpus as i32).collect();
        assert_eq!(all.devices().unwrap(), every);
        let err = Context::builder()
            .device(DeviceKind::Cuda)
            .devices(&[0, gpus as i32])
            .build()
            .unwrap_err();
        assert_eq!(err.status, Status::NoDevice, "{err}");
    }
    // A negative ordinal is refused by the library whatever the machine.
    let err = Context::builder().devices(&[0, -2]).build().unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument, "{err}");
}

#[test]
fn too_many_device_ids_are_refused_in_rust() {
    assert_eq!(quiver::MAX_DEVICES, 64);
    let ids = vec![0; quiver::MAX_DEVICES + 1];
    for kind in [DeviceKind::Auto, DeviceKind::Cpu, DeviceKind::Cuda] {
        let err = Context::builder()
            .device(kind)
            .devices(&ids)
            .build()
            .unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument);
        // This crate's message, not the library's (which would name QV_DEVICE_CPU for Cpu).
        assert!(err.message.starts_with("devices: 65 ordinals"), "{err}");
    }
    if quiver::cuda_device_count().unwrap() == 0 {
        // MAX_DEVICES itself passes on to the library: Auto falls back to the CPU.
        let ctx = Context::builder()
            .devices(&ids[..quiver::MAX_DEVICES])
            .build()
            .unwrap();
        assert_eq!(ctx.devices().unwrap(), Vec::<i32>::new());
    }
}

#[test]
fn contexts_and_indexes_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Context>();
    send_sync::<Index>();
    send_sync::<quiver::RangeResult>();
    send_sync::<quiver::SearchParams<'static>>();
    send_sync::<Error>();
}

#[test]
fn errors_display_status_and_message() {
    let ctx = common::context();
    let err = Index::new(&ctx, "NoSuchKind", 8, Metric::L2).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument);
    assert_eq!(err.code(), quiver::sys::QV_ERR_INVALID_ARGUMENT);
    assert!(!err.message.is_empty());
    let shown = err.to_string();
    assert!(shown.starts_with("QV_ERR_INVALID_ARGUMENT: "), "{shown}");
    assert!(shown.ends_with(&err.message));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    assert!(boxed.to_string().contains("QV_ERR_INVALID_ARGUMENT"));
}

#[test]
fn a_context_may_be_dropped_before_its_indexes() {
    let ctx = common::context();
    let mut index = Index::new(&ctx, "Flat", 4, Metric::L2).unwrap();
    let other = index.context().clone();
    drop(ctx);
    drop(other);
    index.add(&common::data(10, 4, 1)).unwrap();
    let found = index
        .search(&common::data(1, 4, 1), 1, &Default::default())
        .unwrap();
    assert_eq!(found.ids(), &[0]);
}
