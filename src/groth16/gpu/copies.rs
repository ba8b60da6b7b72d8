//! Which of a resident key's base sets get shifted copies
//! ([`ResidentBases::precompute`]). Through them a dense MSM adds all its
//! windows into one set of buckets, so it can take wider windows (fewer
//! additions), but they take a copy of the set per window (13 at 20 bits),
//! so they go only where they fit beside the working memory of proofs. A
//! set short of room for all of them takes fewer: its windows then share
//! a few bucket sets instead of one, which keeps most of the gain.

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
    /// the device besides; a set that has room for some of its copies, not
    /// all, gets those.
    #[default]
    WhereTheyFit,
    /// As [`WhereTheyFit`](Self::WhereTheyFit), with the copies held to
    /// this many device bytes beyond the key's points in all (for a device
    /// the key shares with other work); a set the rest of the budget cannot
    /// copy whole gets fewer copies.
    WithinBytes(u64),
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
    let mut budget = match policy {
        ShiftedCopies::Never => return,
        ShiftedCopies::WhereTheyFit => u64::MAX,
        ShiftedCopies::WithinBytes(bytes) => bytes,
    };
    let reserve =
        proof_peak_bytes(&key.sizes) + guard.device().total_memory() / RESERVE_SHARE_OF_DEVICE;
    copy_if_room(guard, &mut key.b_g2, "b_g2", reserve, &mut budget);
    copy_if_room(guard, &mut key.h, "h", reserve, &mut budget);
    copy_if_room(guard, &mut key.a, "a", reserve, &mut budget);
    copy_if_room(guard, &mut key.b_g1, "b_g1", reserve, &mut budget);
    copy_if_room(guard, &mut key.l, "l", reserve, &mut budget);
}

/// Copies `set` where free memory beside `reserve` and `budget` (bytes
/// beyond the points, reduced by what the copies take) allow.
fn copy_if_room<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    set: &mut ResidentBases<G>,
    name: &str,
    reserve: u64,
    budget: &mut u64,
) where
    G::Curve: Send + Sync,
{
    if set.len() < copies_from() {
        return;
    }
    let bits = tuned_copy_bits::<G>(set.len());
    let room = ResidentBases::<G>::window_copies(set.len(), bits).and_then(|windows| {
        let width = ResidentBases::<G>::window_copy_bits(set.len(), bits)?;
        Ok((windows, width, guard.device().free_memory()?))
    });
    let (windows, width, free) = match room {
        Ok(room) => room,
        Err(error) => {
            log::warn!("no shifted copies of {name}: {error}");
            return;
        }
    };
    let per_copy = ResidentBases::<G>::bytes_of_copies(set.len(), 1).max(1);
    // The copies are made beside the points (freed after), so free memory
    // must hold all of them; the budget counts only those beyond copy 0.
    let fit_free = free.saturating_sub(reserve) / per_copy;
    let fit_budget = (*budget / per_copy).saturating_add(1);
    let fit = u32::try_from(fit_free.min(fit_budget)).unwrap_or(u32::MAX);
    let Some(copies) = copies_that_fit(windows, fit, most_bucket_sets(set.len(), width)) else {
        log::debug!(
            "no shifted copies of {name}: {} MiB a copy, {} MiB kept for proofs, {} MiB free, {} MiB of budget left",
            per_copy >> 20,
            reserve >> 20,
            free >> 20,
            *budget >> 20
        );
        return;
    };
    match set.precompute_some(guard, bits, Some(copies)) {
        Ok(()) => {
            *budget = budget.saturating_sub(u64::from(copies - 1) * per_copy);
            log::debug!(
                "{name}: {} of {windows} shifted copies for {}-bit windows, {} MiB",
                set.copies(),
                set.copy_bits().unwrap_or(0),
                set.device_bytes() >> 20
            )
        }
        Err(error) => log::warn!("no shifted copies of {name}: {error}"),
    }
}

/// The copies' window bits for a set of `len` G points where a tuning sweep
/// names them in `G16_COPY_BITS` (read at each call; its form is
/// [`parse_copy_bits`]'s); None keeps the built-in choice. Sets below 2^20
/// points always keep it.
fn tuned_copy_bits<G: GpuCurve>(len: usize) -> Option<u32> {
    if len < 1 << 20 {
        return None;
    }
    parse_copy_bits(&std::env::var("G16_COPY_BITS").ok()?, G::IS_G2)
}

/// `BITS` for both curves or `G1BITS,G2BITS`: the bits for G2 (`g2`) or
/// G1, None for anything else. The C++ side refuses bits outside 4..=24.
fn parse_copy_bits(text: &str, g2: bool) -> Option<u32> {
    let parsed: Vec<u32> = text
        .split(',')
        .map(|field| field.trim().parse().ok())
        .collect::<Option<_>>()?;
    match (parsed.as_slice(), g2) {
        ([both], _) => Some(*both),
        ([g1, _], false) => Some(*g1),
        ([_, g2_bits], true) => Some(*g2_bits),
        _ => None,
    }
}

/// Fewest copies (copy 0 included) that make a set's copies.
const MIN_PARTIAL_COPIES: u32 = 2;

/// The most bucket sets a set of `len` points may be split into when it
/// cannot have a copy per window of `bits`. Each set adds 2^(bits - 1)
/// buckets to reduce, and fewer copies won while all the sets' buckets
/// were at most half the points (G1, on-device ms, against no copies):
/// - 20 bits: 2^24 points, 2 copies (7 sets, buckets 0.22 of the points)
///   142.9 against 154.0; 2^22, 4 copies (4 sets, 0.5) 41.6 against 43.2,
///   2 copies (7 sets, 0.87) 47.8; 2^20, 7 copies (2 sets, 1.0) 15.3
///   against 15.6, a tie;
/// - 22 bits: 2^24, 3 copies (4 sets, 0.5) 149.6 against 157.2, 2 copies
///   (6 sets, 0.75) 168.8; 2^22, 6 copies (2 sets, 1.0) 45.6 against 42.8.
fn most_bucket_sets(len: usize, bits: u32) -> u32 {
    let sets = (len as u64 >> bits.min(63)).max(1);
    u32::try_from(sets).unwrap_or(u32::MAX)
}

/// How many copies of a set to make when `fit` copies (copy 0 included)
/// have room: one per window where they fit (one bucket set); else the
/// fewest bucket sets `fit` allows, with the fewest copies that give them
/// (13 windows in 3 sets take 5 copies, not 6), if that is no more than
/// `most_sets`; none otherwise.
fn copies_that_fit(windows: u32, fit: u32, most_sets: u32) -> Option<u32> {
    if fit >= windows {
        return Some(windows);
    }
    if fit < MIN_PARTIAL_COPIES {
        return None;
    }
    let sets = windows.div_ceil(fit);
    (sets <= most_sets).then(|| windows.div_ceil(sets))
}

#[cfg(test)]
mod tests {
    use super::{copies_that_fit, most_bucket_sets, parse_copy_bits};

    #[test]
    fn copy_bits_for_sweeps_name_one_or_both_curves() {
        assert_eq!(parse_copy_bits("22", false), Some(22));
        assert_eq!(parse_copy_bits("22", true), Some(22));
        assert_eq!(parse_copy_bits("22, 20", false), Some(22));
        assert_eq!(parse_copy_bits("22,20", true), Some(20));
        for bad in ["", "x", "22,", "1,2,3", "-4"] {
            assert_eq!(parse_copy_bits(bad, false), None, "{bad:?}");
        }
    }

    #[test]
    fn copies_fill_the_room_in_even_sets() {
        let any = u32::MAX;
        // 13 windows (20 bits).
        assert_eq!(copies_that_fit(13, u32::MAX, any), Some(13));
        assert_eq!(copies_that_fit(13, 13, any), Some(13));
        assert_eq!(copies_that_fit(13, 12, any), Some(7)); // 2 sets
        assert_eq!(copies_that_fit(13, 7, any), Some(7));
        assert_eq!(copies_that_fit(13, 6, any), Some(5)); // 3 sets: 5, 5, 3
        assert_eq!(copies_that_fit(13, 4, any), Some(4)); // 4 sets
        assert_eq!(copies_that_fit(13, 2, any), Some(2)); // 7 sets
        assert_eq!(copies_that_fit(13, 1, any), None);
        assert_eq!(copies_that_fit(13, 0, any), None);
        for windows in [13, 16, 64] {
            for fit in 2..windows {
                let copies = copies_that_fit(windows, fit, any).unwrap();
                assert!(copies <= fit);
                let sets = windows.div_ceil(copies);
                assert_eq!(sets, windows.div_ceil(fit), "the fewest sets");
                assert!(windows.div_ceil(copies - 1) > sets, "the fewest copies");
            }
        }
    }

    #[test]
    fn smaller_sets_split_into_fewer_bucket_sets() {
        assert_eq!(copies_that_fit(13, 4, 4), Some(4));
        assert_eq!(copies_that_fit(13, 3, 4), None); // would be 5 sets
        assert_eq!(copies_that_fit(13, 12, 1), None);
        assert_eq!(copies_that_fit(13, 13, 1), Some(13)); // whole copies always
                                                          // 20 bits, 13 windows: any split at 2^24, none below 2^21.
        let most = most_bucket_sets((1 << 24) - 2, 20);
        assert!(most >= 13);
        assert_eq!(copies_that_fit(13, 2, most), Some(2));
        assert_eq!(most_bucket_sets(1 << 22, 20), 4);
        assert_eq!(most_bucket_sets((1 << 20) - 2, 20), 1);
        // 22 bits, 12 windows, four times the buckets a set: at 2^24 three
        // copies (4 sets) won against none, two (6 sets) lost.
        let most = most_bucket_sets(1 << 24, 22);
        assert_eq!(copies_that_fit(12, 3, most), Some(3));
        assert_eq!(copies_that_fit(12, 2, most), None);
        assert_eq!(copies_that_fit(12, 6, most_bucket_sets(1 << 22, 22)), None);
        assert_eq!(most_bucket_sets(1 << 10, 24), 1);
        assert_eq!(most_bucket_sets(usize::MAX, 4), u32::MAX);
    }
}
