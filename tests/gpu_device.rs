//! Device enumeration and per-device launches on every CUDA device at once.
//! Each test prints `skipped: no CUDA device` and returns where there is none
//! (CI and the development machine have no GPU).
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;

use std::time::Instant;

use groth16_gpu::device::{Device, GpuError};

const THREADS_PER_DEVICE: usize = 4;
const LAUNCHES_PER_THREAD: u32 = 1000;

#[test]
fn an_ordinal_past_the_last_device_is_an_error_not_a_crash() {
    // Holds with and without a GPU: no device, a failing driver and a too
    // large ordinal all come back as errors.
    assert!(Device::open(usize::MAX).is_err());
    if let Ok(count) = Device::count() {
        match Device::open(count) {
            Err(GpuError::InvalidOrdinal {
                ordinal,
                count: seen,
            }) => {
                assert_eq!((ordinal, seen), (count, count))
            }
            Err(GpuError::NoDevice) => assert_eq!(count, 0),
            other => panic!("opening ordinal {count} of {count} gave {other:?}"),
        }
    }
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
        for device in &devices {
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
        for device in &devices {
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
    for device in &devices {
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
