//! MSMs and batch additions of bases uploaded for one call; see
//! [`ResidentBases`] to keep them on the device across calls.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;

use super::curve::GpuCurve;
use super::msm::MsmTiming;
use super::resident::{mismatch, ResidentBases};
use super::tuning::MsmTuning;
use crate::device::{DeviceGuard, GpuError};

/// Packs booleans into bitmap words: bit i of word i / 64 is `bits[i]`.
pub fn pack_bits(bits: &[bool]) -> Vec<u64> {
    bits.chunks(64)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u64, |word, (i, &bit)| word | (u64::from(bit) << i))
        })
        .collect()
}

fn msm<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    bases: &[G],
    scalars: &[Scalar],
    tuning: &MsmTuning,
) -> Result<(G::Curve, MsmTiming), GpuError>
where
    G::Curve: Send + Sync,
{
    if bases.len() != scalars.len() {
        return Err(mismatch("MSM scalars", scalars.len(), bases.len()));
    }
    if bases.is_empty() {
        tuning.check()?;
        return Ok((G::Curve::identity(), MsmTiming::default()));
    }
    ResidentBases::upload(guard, bases)?.msm_range_tuned(guard, 0, scalars, tuning)
}

/// Σ `scalars[i]` · `bases[i]` in G1 on the guard's device (bases uploaded for
/// this call; see [`ResidentBases`] to keep them there).
pub fn msm_g1(
    guard: &DeviceGuard<'_>,
    bases: &[G1Affine],
    scalars: &[Scalar],
) -> Result<G1Projective, GpuError> {
    msm_g1_tuned(guard, bases, scalars, &MsmTuning::default()).map(|(sum, _)| sum)
}

/// [`msm_g1`] run as `tuning` says, with the device time and what the call
/// ran with.
pub fn msm_g1_tuned(
    guard: &DeviceGuard<'_>,
    bases: &[G1Affine],
    scalars: &[Scalar],
    tuning: &MsmTuning,
) -> Result<(G1Projective, MsmTiming), GpuError> {
    msm(guard, bases, scalars, tuning)
}

/// Σ `scalars[i]` · `bases[i]` in G2 on the guard's device.
pub fn msm_g2(
    guard: &DeviceGuard<'_>,
    bases: &[G2Affine],
    scalars: &[Scalar],
) -> Result<G2Projective, GpuError> {
    msm_g2_tuned(guard, bases, scalars, &MsmTuning::default()).map(|(sum, _)| sum)
}

/// [`msm_g2`] run as `tuning` says, with the device time and what the call
/// ran with.
pub fn msm_g2_tuned(
    guard: &DeviceGuard<'_>,
    bases: &[G2Affine],
    scalars: &[Scalar],
    tuning: &MsmTuning,
) -> Result<(G2Projective, MsmTiming), GpuError> {
    msm(guard, bases, scalars, tuning)
}

/// Σ of the G1 bases whose bit is set (bit i of word i / 64 selects
/// `bases[i]`; `bits` holds at least bases.len() bits, and those past the
/// last base are ignored).
pub fn batch_add_g1(
    guard: &DeviceGuard<'_>,
    bases: &[G1Affine],
    bits: &[u64],
) -> Result<G1Projective, GpuError> {
    if bases.is_empty() {
        return Ok(G1Projective::identity());
    }
    ResidentBases::upload(guard, bases)?.batch_add(guard, bits, bases.len())
}

/// Σ of the G2 bases whose bit is set.
pub fn batch_add_g2(
    guard: &DeviceGuard<'_>,
    bases: &[G2Affine],
    bits: &[u64],
) -> Result<G2Projective, GpuError> {
    if bases.is_empty() {
        return Ok(G2Projective::identity());
    }
    ResidentBases::upload(guard, bases)?.batch_add(guard, bits, bases.len())
}
