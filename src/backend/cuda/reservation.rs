//! Device memory held back for tests and benchmarks: a device short of
//! memory, to see how requests that do not fit are refused.

use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

/// Device memory held until drop: leaves a device short of memory, e.g. to
/// test how a request that does not fit is refused.
pub struct DeviceReservation {
    handle: cxx::UniquePtr<ffi::DeviceReservation>,
}

// SAFETY: a device pointer and plain data; the destructor selects the device.
unsafe impl Send for DeviceReservation {}

impl DeviceReservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.handle.as_ref().map_or(0, |r| r.bytes())
    }
}

/// Holds `bytes` of the guard's device memory until the result drops; too
/// much is an error.
pub fn reserve_device_memory(
    guard: &DeviceGuard<'_>,
    bytes: u64,
) -> Result<DeviceReservation, GpuError> {
    Ok(DeviceReservation {
        handle: ffi::reserve_device_memory(guard.ffi_device(), bytes)?,
    })
}
