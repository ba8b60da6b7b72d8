//! The GPU code's arithmetic and bucket logic run on the CPU alone (the same
//! C++ functions, compiled for the host): what host tests compare with
//! blstrs without a GPU. Slow; for small inputs.

use blstrs::Scalar;

use super::curve::{as_words, combine_windows, GpuCurve, MAX_WINDOWS};
use crate::bridge::ffi;
use crate::device::GpuError;

/// Σ `scalars[i]` · `bases[i]` by the GPU's method on the CPU; `window_bits` 0
/// picks the GPU's window, 4..=16 forces one (fewer bits make more windows
/// than the result holds: an error).
pub fn msm<G: GpuCurve>(
    bases: &[G],
    scalars: &[Scalar],
    window_bits: u32,
) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    host_msm(bases, scalars, window_bits, 0, 0)
}

/// [`msm`] through shifted copies of the bases for `copy_bits`-bit windows,
/// made and used as [`ResidentBases::precompute`](super::ResidentBases)'s
/// are (4..=24 bits; a copy per window).
pub fn msm_through_copies<G: GpuCurve>(
    bases: &[G],
    scalars: &[Scalar],
    copy_bits: u32,
) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    msm_through_some_copies(bases, scalars, copy_bits, 0)
}

/// [`msm_through_copies`] with `copies` copies in all (0: one per window),
/// as [`ResidentBases::precompute_some`](super::ResidentBases) makes them.
pub fn msm_through_some_copies<G: GpuCurve>(
    bases: &[G],
    scalars: &[Scalar],
    copy_bits: u32,
    copies: u32,
) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    if copy_bits == 0 {
        return Err(GpuError::Native("copies need their window bits".into()));
    }
    host_msm(bases, scalars, 0, copy_bits, copies)
}

fn host_msm<G: GpuCurve>(
    bases: &[G],
    scalars: &[Scalar],
    window_bits: u32,
    copy_bits: u32,
    copy_count: u32,
) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    if bases.len() != scalars.len() {
        return Err(GpuError::Native(format!(
            "MSM scalars: got {}, expected {}",
            scalars.len(),
            bases.len()
        )));
    }
    let mut out = vec![0u64; MAX_WINDOWS * G::JACOBIAN_WORDS];
    // SAFETY: bases.len() points and as many 4-word scalars are read; `out`
    // has out.len() words and the C++ side writes at most that many.
    let bits = unsafe {
        ffi::host_msm_windows(
            G::IS_G2,
            as_words(bases),
            as_words(scalars),
            bases.len(),
            window_bits,
            copy_bits,
            copy_count,
            out.as_mut_ptr(),
            out.len(),
        )
    }?;
    Ok(combine_windows::<G>(&out, bits))
}

/// Σ of the bases whose bit is set, by the GPU's method on the CPU.
pub fn batch_add<G: GpuCurve>(bases: &[G], bits: &[u64]) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    if bits.len() < bases.len().div_ceil(64) {
        return Err(GpuError::Native("bitmap shorter than the bases".into()));
    }
    let mut out = vec![0u64; G::JACOBIAN_WORDS];
    // SAFETY: as in `msm`; ceil(n / 64) bitmap words are read.
    unsafe {
        ffi::host_batch_add(
            G::IS_G2,
            as_words(bases),
            bits.as_ptr(),
            bases.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    }?;
    Ok(G::from_jacobian_words(&out))
}

/// A field operation of the GPU code, run on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    /// Fp multiplication.
    FpMul,
    /// Fp addition.
    FpAdd,
    /// Fp subtraction.
    FpSub,
    /// Fp2 multiplication.
    Fp2Mul,
    /// Fp2 squaring (`b` ignored).
    Fp2Sqr,
    /// Fr out of Montgomery form (`b` ignored): the canonical integer.
    FrFromMontgomery,
    /// Fr multiplication (the NTT's).
    FrMul,
    /// Fp squaring (`b` ignored).
    FpSqr,
    /// Fr squaring (`b` ignored).
    FrSqr,
    /// Fp inverse, 0 for 0 (`b` ignored).
    FpInverse,
    /// Fp2 inverse, 0 for 0 (`b` ignored).
    Fp2Inverse,
    /// Fp2 multiplication as a pair of threads computes it, each lane its
    /// half (fp2_pairs.cuh), both halves here.
    Fp2PairMul,
}

/// Runs `op` on blst-layout words: 6 per Fp, 12 per Fp2, 4 per Fr; returns
/// the result's words.
pub fn field_op(op: FieldOp, a: &[u64], b: &[u64]) -> Result<Vec<u64>, GpuError> {
    let words = match op {
        FieldOp::FpMul | FieldOp::FpAdd | FieldOp::FpSub | FieldOp::FpSqr | FieldOp::FpInverse => 6,
        FieldOp::Fp2Mul | FieldOp::Fp2Sqr | FieldOp::Fp2Inverse | FieldOp::Fp2PairMul => 12,
        FieldOp::FrFromMontgomery | FieldOp::FrMul | FieldOp::FrSqr => 4,
    };
    if a.len() != words || b.len() != words {
        return Err(GpuError::Native(format!(
            "field operands must be {words} words"
        )));
    }
    let mut out = vec![0u64; words];
    // SAFETY: `a`, `b` and `out` hold the operand size of `op` (checked).
    unsafe { ffi::host_field_op(op as u32, a.as_ptr(), b.as_ptr(), out.as_mut_ptr()) }?;
    Ok(out)
}
