//! What the GPU benchmark examples share: their numeric arguments and the
//! device they time.

use groth16_gpu::device::{Device, DeviceMutex, GpuError};

/// The arguments that parse as numbers, in order (flags are skipped).
#[allow(dead_code)] // gpu_msm reads its own, around its tuning flags' values
pub fn numeric_args() -> Vec<u32> {
    std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect()
}

/// Device 0, or None after printing that the benchmark skipped where the
/// process sees no CUDA device.
pub fn first_device_or_skip() -> Result<Option<&'static DeviceMutex>, GpuError> {
    if Device::count().unwrap_or(0) == 0 {
        println!("skipped: no CUDA device");
        return Ok(None);
    }
    let device = DeviceMutex::get(0)?;
    println!("device: {:?}", device.lock().device().properties());
    Ok(Some(device))
}
