//! Device enumeration and per-device launches on every CUDA device at once.
//! Each test prints `skipped: no CUDA device` and returns where there is none
//! (CI and the development machine have no GPU).
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;

use std::time::Instant;

use groth16_gpu::device::{Device, DeviceMutex, GpuError};

const THREADS_PER_DEVICE: usize = 4;
const LAUNCHES_PER_THREAD: u32 = 1000;

/// What asking for ordinal `count` of `count` devices gave: the ordinal's
/// error, or no device at all.
fn assert_out_of_range<T: std::fmt::Debug>(count: usize, result: Result<T, GpuError>) {
    match result {
        Err(GpuError::InvalidOrdinal {
            ordinal,
            count: seen,
        }) => assert_eq!((ordinal, seen), (count, count)),
        Err(GpuError::NoDevice) => assert_eq!(count, 0),
        other => panic!("ordinal {count} of {count} gave {other:?}"),
    }
}

#[test]
fn an_ordinal_past_the_last_device_is_an_error_not_a_crash() {
    // Holds with and without a GPU: no device, a failing driver and a too
    // large ordinal all come back as errors.
    assert!(Device::open(usize::MAX).is_err());
    assert!(DeviceMutex::get(usize::MAX).is_err());
    if let Ok(count) = Device::count() {
        assert_out_of_range(count, Device::open(count));
        assert_out_of_range(count, DeviceMutex::get(count));
    }
}

/// Two parts of a program that know nothing of each other, each asking for
/// device 0's lock its own way, get the same lock: while one holds it the
/// other waits.
#[test]
fn two_independent_users_of_one_device_exclude_each_other() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let by_ordinal = DeviceMutex::get(0).expect("device 0's lock");
    assert!(std::ptr::eq(by_ordinal, &devices[0]));
    assert!(std::ptr::eq(
        DeviceMutex::all().expect("the locks again"),
        devices
    ));

    let held = devices[0].lock();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let other_user = scope.spawn(move || {
            let device = DeviceMutex::get(0).expect("device 0's lock");
            assert!(device.try_lock().is_none(), "a second holder got in");
            let guard = device.lock();
            locked_tx.send(()).expect("the test waits");
            drop(guard);
        });
        assert!(
            locked_rx
                .recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "the other user locked a held device"
        );
        drop(held);
        locked_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the other user gets the device once it is free");
        other_user.join().expect("the other user");
    });
}

#[test]
fn devices_report_sane_properties() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    for (ordinal, device) in devices.iter().enumerate() {
        let properties = device.properties();
        println!("device {ordinal}: {properties:?}");
        assert_eq!(properties.ordinal, ordinal);
        assert!(!properties.name.is_empty());
        assert!(properties.sm_count > 0);
        assert!(properties.compute_capability.0 >= 5);
        let free = device.lock().device().free_memory().expect("free memory");
        assert!(free > 0 && free <= properties.total_memory);
        assert!(
            device
                .lock()
                .device()
                .waits_by_blocking()
                .expect("device flags"),
            "an opened device's waits should sleep, not spin"
        );
    }
}

#[test]
fn every_device_at_once_from_several_threads_each() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    std::thread::scope(|scope| {
        for device in devices {
            scope.spawn(move || {
                let started = Instant::now();
                std::thread::scope(|per_device| {
                    for _ in 0..THREADS_PER_DEVICE {
                        per_device.spawn(|| {
                            // Lock per launch so threads of one device interleave.
                            for _ in 0..LAUNCHES_PER_THREAD {
                                device.lock().write_ordinal_roundtrip(1).expect("roundtrip");
                            }
                        });
                    }
                });
                println!(
                    "device {}: {THREADS_PER_DEVICE} threads x {LAUNCHES_PER_THREAD} locked launches in {:.3} s",
                    device.properties().ordinal,
                    started.elapsed().as_secs_f64()
                );
            });
        }
    });
}

#[test]
fn threads_started_in_cpp_select_the_device_themselves() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    std::thread::scope(|scope| {
        for device in devices {
            scope.spawn(move || {
                let started = Instant::now();
                device
                    .lock()
                    .threaded_ordinal_check(THREADS_PER_DEVICE as u32, LAUNCHES_PER_THREAD)
                    .expect("threaded check");
                println!(
                    "device {}: C++ threaded check, {THREADS_PER_DEVICE} threads x {LAUNCHES_PER_THREAD} launches in {:.3} s",
                    device.properties().ordinal,
                    started.elapsed().as_secs_f64()
                );
            });
        }
    });
}

#[test]
fn one_guard_many_launches_times_the_roundtrip() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    for device in devices {
        let mut guard = device.lock();
        let started = Instant::now();
        guard
            .write_ordinal_roundtrip(LAUNCHES_PER_THREAD)
            .expect("roundtrip");
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "device {}: {LAUNCHES_PER_THREAD} launches under one lock in {seconds:.3} s ({:.1} us each)",
            device.properties().ordinal,
            seconds * 1e6 / f64::from(LAUNCHES_PER_THREAD)
        );
    }
}
