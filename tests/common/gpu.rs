//! What the GPU tests share (included by path): the devices, or a printed
//! skip where there are none (CI and the development machine have no GPU).
#![allow(dead_code)]

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use groth16_gpu::device::{Device, DeviceMutex};

/// Every device behind its own lock, or None after saying why there is none.
pub fn devices_or_skip() -> Option<&'static [DeviceMutex]> {
    match Device::count() {
        Ok(0) => {
            println!("skipped: no CUDA device (the driver reports none)");
            None
        }
        Err(error) => {
            println!("skipped: no CUDA device ({error})");
            None
        }
        Ok(_) => Some(DeviceMutex::all().expect("open every device")),
    }
}

/// At least two devices, or None after saying why the test skips.
pub fn two_devices_or_skip() -> Option<&'static [DeviceMutex]> {
    let devices = devices_or_skip()?;
    if devices.len() < 2 {
        println!("skipped: needs two CUDA devices, found {}", devices.len());
        return None;
    }
    Some(devices)
}

/// Device memory outlives a guard (resident keys, reservations), so the
/// harness's parallel tests meet in it between their locks: the
/// memory-pressure test holds this for writing (no other test allocates
/// while it starves the device), the others for reading.
static DEVICE_MEMORY: RwLock<()> = RwLock::new(());

pub fn shared_device_memory() -> RwLockReadGuard<'static, ()> {
    DEVICE_MEMORY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The memory lock for writing: no other test allocates device memory
/// meanwhile (for tests that fill it or compare its free amount).
pub fn exclusive_device_memory() -> RwLockWriteGuard<'static, ()> {
    DEVICE_MEMORY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
