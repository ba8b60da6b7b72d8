//! Which of a resident key's base sets get shifted copies
//! ([`ResidentBases::precompute`]). Through them a dense MSM adds all its
//! windows into one set of buckets, so it can take wider windows (fewer
//! additions), but they take a copy of the set per window (13 at 20 bits),
//! so they go only where they fit beside the working memory of proofs.

use super::key::{h_polynomial_bytes, ResidentKey};
use crate::backend::cuda::{copies_from, GpuCurve, ResidentBases};
use crate::device::DeviceGuard;
use crate::groth16::prover::KeySizes;

/// Whether a key upload adds shifted copies of its bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShiftedCopies {
    /// For each base set of [`copies_from`] points or more, G2 first (its
    /// MSM gains the most per byte), then h, a, b_g1 and l, while the
    /// copies leave room for a proof's working memory and a sixteenth of
    /// the device besides.
    #[default]
    WhereTheyFit,
    /// None: the key takes only its points.
    Never,
}

/// Device bytes per point of one MSM's scratch at 16-bit windows (two key
/// and value buffers of 16 entries a point, the partial sums of 32-entry
/// blocks, the scalars), G1 and G2; measured totals at 2^24 agree within
/// a few percent.
const G1_MSM_SCRATCH_PER_POINT: u64 = 480;
const G2_MSM_SCRATCH_PER_POINT: u64 = 672;
/// The part of the device's memory kept free beside one proof's estimate.
/// Pipelined 2^24 proofs (two in flight) peaked at 30 GB beside the key on
/// an H200, below the 37 GB that proof_peak_bytes estimates for one: the
/// lanes of two proofs overlap only in part, and an MSM short of memory
/// runs in chunks.
const RESERVE_SHARE_OF_DEVICE: u64 = 16;

/// Device bytes one proof may hold at once: the H polynomial's four domains
/// of scalars and the scratch of the MSMs that run side by side (h, l, the
/// larger of a and b_g1, one after the other on their lane, and b_g2).
fn proof_peak_bytes(sizes: &KeySizes) -> u64 {
    let g1_points = (sizes.h + sizes.l + sizes.a.max(sizes.b_g1)) as u64;
    h_polynomial_bytes(sizes)
        + g1_points * G1_MSM_SCRATCH_PER_POINT
        + sizes.b_g2 as u64 * G2_MSM_SCRATCH_PER_POINT
}

/// Adds shifted copies to `key`'s base sets as `policy` says. A set whose
/// copies cannot be made (device memory, a CUDA error) keeps its points
/// alone, with a warning: the key works either way.
pub(super) fn add_shifted_copies(
    guard: &DeviceGuard<'_>,
    key: &mut ResidentKey,
    policy: ShiftedCopies,
) {
    if policy == ShiftedCopies::Never {
        return;
    }
    let reserve =
        proof_peak_bytes(&key.sizes) + guard.device().total_memory() / RESERVE_SHARE_OF_DEVICE;
    copy_if_room(guard, &mut key.b_g2, "b_g2", reserve);
    copy_if_room(guard, &mut key.h, "h", reserve);
    copy_if_room(guard, &mut key.a, "a", reserve);
    copy_if_room(guard, &mut key.b_g1, "b_g1", reserve);
    copy_if_room(guard, &mut key.l, "l", reserve);
}

fn copy_if_room<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    set: &mut ResidentBases<G>,
    name: &str,
    reserve: u64,
) where
    G::Curve: Send + Sync,
{
    if set.len() < copies_from() {
        return;
    }
    // The copies are made beside the points, which are freed after.
    let room = ResidentBases::<G>::copies_bytes(set.len(), None)
        .and_then(|needed| Ok((needed, guard.device().free_memory()?)));
    let (needed, free) = match room {
        Ok(room) => room,
        Err(error) => {
            log::warn!("no shifted copies of {name}: {error}");
            return;
        }
    };
    if free < needed.saturating_add(reserve) {
        log::debug!(
            "no shifted copies of {name}: {} MiB needed beside {} MiB kept for proofs, {} MiB free",
            needed >> 20,
            reserve >> 20,
            free >> 20
        );
        return;
    }
    match set.precompute(guard, None) {
        Ok(()) => log::debug!(
            "{name}: {} shifted copies for {}-bit windows, {} MiB",
            set.copies(),
            set.copy_bits().unwrap_or(0),
            set.device_bytes() >> 20
        ),
        Err(error) => log::warn!("no shifted copies of {name}: {error}"),
    }
}
