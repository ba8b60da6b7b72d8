//! Knobs for tests and benchmarks: device memory held back, and the MSM's
//! chunk cap, first-level threads, G2 layout and window bits forced for
//! every later MSM in the process. None changes a result, only its speed
//! or whether it fits.

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

/// Caps the points of one MSM chunk for every later MSM in this process
/// (`None`: no cap), so tests can run the multi-chunk path (how MSMs larger
/// than free device memory, or of 2^27 points, run) at small sizes. Results
/// are the same with any cap; only their speed changes.
#[doc(hidden)]
pub fn set_msm_chunk_cap_for_tests(points: Option<usize>) {
    ffi::set_msm_chunk_cap_for_tests(points.unwrap_or(0));
}

/// Sets how many first-level threads an MSM chunk keeps as its blocks of
/// sorted entries grow, for every later MSM in this process (`None`: the
/// default, about a million), so tests run the long blocks of 2^24-point
/// MSMs at small sizes. Results are the same with any value.
#[doc(hidden)]
pub fn set_msm_first_level_threads_for_tests(threads: Option<usize>) {
    ffi::set_msm_first_level_threads_for_tests(threads.unwrap_or(0));
}

/// How the first bucket level of a G2 MSM holds its points (the values of
/// `G16_MSM_G2_FIRST_LEVEL`); the levels after it and the window
/// reduction hold theirs whole with `WholePoints`, over pairs otherwise.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G2FirstLevel {
    /// Each point whole in one thread.
    WholePoints = 1,
    /// Each point split over a pair of threads.
    Pairs = 2,
    /// The same held to 128 registers: the default.
    Pairs128 = 3,
}

impl G2FirstLevel {
    pub const ALL: [G2FirstLevel; 3] = [Self::WholePoints, Self::Pairs, Self::Pairs128];
}

/// Runs the first bucket level of every later G2 MSM in this process in
/// `layout` (`None`: the built-in choice) unless `G16_MSM_G2_FIRST_LEVEL`
/// is set, so tests cover each. Results are the same in every layout.
#[doc(hidden)]
pub fn set_msm_g2_first_level_for_tests(layout: Option<G2FirstLevel>) {
    let mode = layout.map_or(0, |layout| layout as u32);
    ffi::set_msm_g2_first_level_for_tests(mode).expect("a G2FirstLevel is in 0..=3");
}

/// Forces the window bits of every later MSM on the device in this process
/// (`None`: each size chooses its own), so a benchmark can time one size at
/// several windows. Results are the same with any window; bits outside
/// 4..=20 are an error.
#[doc(hidden)]
pub fn set_msm_window_bits_for_tests(bits: Option<u32>) -> Result<(), GpuError> {
    Ok(ffi::set_msm_window_bits_for_tests(bits.unwrap_or(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C++ side refuses a layout past the last (a host check).
    #[test]
    fn g2_first_level_modes_past_the_last_are_refused() {
        assert!(ffi::set_msm_g2_first_level_for_tests(G2FirstLevel::Pairs128 as u32 + 1).is_err());
        assert!(ffi::set_msm_g2_first_level_for_tests(u32::MAX).is_err());
    }
}
