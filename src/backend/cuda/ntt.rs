//! NTTs over the scalar field on the GPU: forward and inverse, plain and on
//! the coset g·⟨ω⟩ (g the field's multiplicative generator, as on the CPU),
//! up to 2^27 values. Same results as [`Domain`](crate::backend::cpu::Domain).

use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::backend::cpu::Domain;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

/// Which transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// Coefficients to evaluations at ω^i.
    Forward,
    /// Evaluations at ω^i to coefficients.
    Inverse,
    /// Coefficients to evaluations at g·ω^i.
    CosetForward,
    /// Evaluations at g·ω^i to coefficients.
    CosetInverse,
}

/// Transforms `values` in place on the guard's device; returns the device
/// time in milliseconds (upload, transform, download). The length must be a
/// power of two, at most 2^27.
pub fn ntt(guard: &DeviceGuard<'_>, values: &mut [Scalar], kind: NttKind) -> Result<f32, GpuError> {
    let n = values.len();
    if !n.is_power_of_two() || n > 1 << 27 {
        return Err(GpuError::Native(format!(
            "NTT length must be a power of two up to 2^27, got {n}"
        )));
    }
    let domain = Domain::new(n).map_err(|e| GpuError::Native(e.to_string()))?;
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let g_inv = g.invert().unwrap();
    let (omega, pre, scale, post) = match kind {
        NttKind::Forward => (domain.omega(), None, None, None),
        NttKind::CosetForward => (domain.omega(), Some(g), None, None),
        NttKind::Inverse => (
            domain.omega_inverse(),
            None,
            Some(domain.size_inverse()),
            None,
        ),
        NttKind::CosetInverse => (
            domain.omega_inverse(),
            None,
            Some(domain.size_inverse()),
            Some(g_inv),
        ),
    };
    let words = |s: &Option<Scalar>| s.as_ref().map_or(std::ptr::null(), scalar_words);
    let mut device_ms = 0f32;
    // SAFETY: Scalar is blst_fr, four u64 words (tests/gpu_ffi_layout.rs);
    // `values` is n of them, written in place; the constants live until the
    // call returns; null means "skip this step".
    unsafe {
        ffi::ntt_fr(
            guard.ffi_device(),
            values.as_mut_ptr().cast::<u64>(),
            n,
            scalar_words(&omega),
            words(&pre),
            words(&scale),
            words(&post),
            &mut device_ms,
        )?;
    }
    Ok(device_ms)
}

fn scalar_words(s: &Scalar) -> *const u64 {
    const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
    (s as *const Scalar).cast::<u64>()
}
