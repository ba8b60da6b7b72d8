//! Fixed-base scalar multiplication on the GPU: many scalars times one
//! base, for proving keys (every query of a key is one base times a scalar
//! per point).

use blstrs::Scalar;
use rayon::prelude::*;

use super::curve::{as_words, GpuCurve};
use super::point_staging::PointStaging;
use super::resident::mismatch;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

/// Windows of `bits` bits that cover a 255-bit scalar: ceil(255 / bits).
pub fn fixed_base_windows(bits: u32) -> usize {
    ffi::fixed_base_windows(bits)
}

/// `scalars[i] · base` for every scalar, as affine points (the identity for
/// a zero scalar), computed on the guard's device.
///
/// `table` holds the base's window multiples for `bits`-bit windows (1..=16):
/// entry `w · (2^bits − 1) + d − 1` is `d · 2^(bits·w) · base`, for
/// [`fixed_base_windows`]`(bits)` windows. Scalars cross to the device in
/// passes of `batch` (`None`: as many as a quarter of the free memory holds,
/// at most 2^22), two in flight. The points come back through `staging`
/// where it is given and page-locked (host threads copy them on from its
/// slots: a key's generation lends one to every query), else through the
/// driver's bounce buffers. Too little device memory is an error that
/// leaves the device usable.
pub fn fixed_base_mul<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    table: &[G],
    bits: u32,
    scalars: &[Scalar],
    batch: Option<usize>,
    staging: Option<&mut PointStaging>,
) -> Result<Vec<G>, GpuError>
where
    G::Curve: Send + Sync,
{
    if !(1..=16).contains(&bits) {
        return Err(GpuError::Native(format!(
            "fixed-base window bits {bits} outside 1..=16"
        )));
    }
    let needed = fixed_base_windows(bits) * ((1usize << bits) - 1);
    if table.len() != needed {
        return Err(mismatch("fixed-base table points", table.len(), needed));
    }
    if scalars.is_empty() {
        return Ok(Vec::new());
    }
    debug_assert!(table.iter().all(|p| !bool::from(p.is_identity())));
    // Written through once here, in parallel: the copies back then land in
    // pages already mapped, where a fresh allocation would take each page
    // fault in the copying thread (a 2^27 query is 13 GB of G1 points).
    let mut out: Vec<G> = (0..scalars.len())
        .into_par_iter()
        .map(|_| G::identity())
        .collect();
    let (staging, staging_bytes) = staging
        .and_then(PointStaging::pinned_words)
        .map_or((std::ptr::null_mut(), 0), |words| {
            (words.as_mut_ptr(), std::mem::size_of_val(words))
        });
    // SAFETY: `table` is table.len() affine points and `scalars`
    // scalars.len() Scalars (blst layouts, checked by
    // tests/gpu_ffi_layout.rs), read only; `out` holds scalars.len()
    // points, which the call overwrites; `staging` is staging_bytes of
    // page-locked memory borrowed mutably for the call (or null).
    unsafe {
        ffi::fixed_base_mul(
            guard.ffi_device(),
            G::IS_G2,
            as_words(table),
            table.len(),
            bits,
            as_words(scalars),
            scalars.len(),
            out.as_mut_ptr().cast::<u64>(),
            batch.unwrap_or(0),
            staging,
            staging_bytes,
        )?;
    }
    Ok(out)
}
