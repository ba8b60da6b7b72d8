//! What the GPU tests share (included by path): the devices, or a printed
//! skip where there are none (CI and the development machine have no GPU).
#![allow(dead_code)]

use groth16_gpu::device::{Device, DeviceMutex};

/// Every device behind its own lock, or None after saying why there is none.
pub fn devices_or_skip() -> Option<Vec<DeviceMutex>> {
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
pub fn two_devices_or_skip() -> Option<Vec<DeviceMutex>> {
    let devices = devices_or_skip()?;
    if devices.len() < 2 {
        println!("skipped: needs two CUDA devices, found {}", devices.len());
        return None;
    }
    Some(devices)
}
