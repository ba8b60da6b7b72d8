//! Which of a resident key's base sets get shifted copies
//! ([`ResidentBases::precompute`]). Through them a dense MSM adds all its
//! windows into one set of buckets, so it can take wider windows (fewer
//! additions), but they take a copy of the set per window (13 at 20 bits),
//! so they go only where they fit beside the working memory of proofs. A
//! set short of room for all of them takes fewer: its windows then share
//! a few bucket sets instead of one, which keeps most of the gain.

use super::resident_key::{h_polynomial_bytes, ResidentKey};
use super::tuning::{CopyShare, ProverTuning};
use crate::backend::cuda::{copies_from, GpuCurve, ResidentBases};
use crate::device::DeviceGuard;
use crate::groth16::prover::KeySizes;

/// Whether a key upload adds shifted copies of its bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShiftedCopies {
    /// For each base set of [`copies_from`] points or more, while the
    /// copies leave room for a proof's working memory and a sixteenth of
    /// the device besides. Where not every set can have all its copies,
    /// they are handed out a step at a time around the sets (b_g2 first,
    /// then h, a, b_g1 and l), each step one bucket set fewer for one set:
    /// a set's first copies save the most, so every set gets some before
    /// any gets all ([`ProverTuning::copy_share`] may fill them set by set
    /// instead, for comparisons).
    #[default]
    WhereTheyFit,
    /// As [`WhereTheyFit`](Self::WhereTheyFit), with the copies held to
    /// this many device bytes beyond the key's points in all (for a device
    /// the key shares with other work).
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

/// Adds shifted copies to `key`'s base sets as `policy` says, their window
/// bits and share as `tuning` says. A set whose copies cannot be made
/// (device memory, a CUDA error) keeps its points alone, with a warning:
/// the key works either way.
pub(super) fn add_shifted_copies(
    guard: &DeviceGuard<'_>,
    key: &mut ResidentKey,
    policy: ShiftedCopies,
    tuning: &ProverTuning,
) {
    let budget = match policy {
        ShiftedCopies::Never => return,
        ShiftedCopies::WhereTheyFit => u64::MAX,
        ShiftedCopies::WithinBytes(bytes) => bytes,
    };
    let free = match guard.device().free_memory() {
        Ok(free) => free,
        Err(error) => {
            log::warn!("no shifted copies: {error}");
            return;
        }
    };
    let reserve =
        proof_peak_bytes(&key.sizes) + guard.device().total_memory() / RESERVE_SHARE_OF_DEVICE;
    // The order sets are made in, and the first served in each round.
    let candidates = [
        candidate(&key.b_g2, "b_g2", tuning),
        candidate(&key.h, "h", tuning),
        candidate(&key.a, "a", tuning),
        candidate(&key.b_g1, "b_g1", tuning),
        candidate(&key.l, "l", tuning),
    ];
    let room = CopyRoom {
        free: free.saturating_sub(reserve),
        budget,
    };
    let share = tuning.copy_share;
    let plan = plan_copies(&candidates, room, share);
    log::debug!(
        "shifted copies ({share:?}, {} MiB free, {} MiB kept for proofs): {}",
        free >> 20,
        reserve >> 20,
        candidates
            .iter()
            .zip(&plan)
            .map(|(c, copies)| match c.windows {
                0 => format!("{} none", c.name),
                windows => format!("{} {copies} of {windows}", c.name),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    make_copies(guard, &mut key.b_g2, &candidates[0], plan[0]);
    make_copies(guard, &mut key.h, &candidates[1], plan[1]);
    make_copies(guard, &mut key.a, &candidates[2], plan[2]);
    make_copies(guard, &mut key.b_g1, &candidates[3], plan[3]);
    make_copies(guard, &mut key.l, &candidates[4], plan[4]);
}

/// One base set's terms for the plan; `windows` 0 for a set that takes
/// no copies (too small, or its copies' geometry refused).
#[derive(Debug, Clone)]
struct CopyCandidate {
    name: &'static str,
    bits: Option<u32>,
    windows: u32,
    most_sets: u32,
    per_copy: u64,
}

fn candidate<G: GpuCurve>(
    set: &ResidentBases<G>,
    name: &'static str,
    tuning: &ProverTuning,
) -> CopyCandidate {
    let bits = tuning.copy_bits::<G>(set.len());
    let mut candidate = CopyCandidate {
        name,
        bits,
        windows: 0,
        most_sets: 0,
        per_copy: ResidentBases::<G>::bytes_of_copies(set.len(), 1).max(1),
    };
    if set.len() < copies_from() {
        return candidate;
    }
    let geometry = ResidentBases::<G>::window_copies(set.len(), bits).and_then(|windows| {
        Ok((
            windows,
            ResidentBases::<G>::window_copy_bits(set.len(), bits)?,
        ))
    });
    match geometry {
        Ok((windows, width)) => {
            candidate.windows = windows;
            candidate.most_sets = most_bucket_sets(set.len(), width);
        }
        Err(error) => log::warn!("no shifted copies of {name}: {error}"),
    }
    candidate
}

/// Makes `copies` copies of `set` (none below 2).
fn make_copies<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    set: &mut ResidentBases<G>,
    candidate: &CopyCandidate,
    copies: u32,
) where
    G::Curve: Send + Sync,
{
    if copies < MIN_PARTIAL_COPIES {
        return;
    }
    let name = candidate.name;
    match set.precompute_some(guard, candidate.bits, Some(copies)) {
        Ok(()) => log::debug!(
            "{name}: {} of {} shifted copies for {}-bit windows, {} MiB",
            set.copies(),
            candidate.windows,
            set.copy_bits().unwrap_or(0),
            set.device_bytes() >> 20
        ),
        Err(error) => log::warn!("no shifted copies of {name}: {error}"),
    }
}

/// What the copies may take: `free` device bytes beside the proofs'
/// reserve, and a `budget` of bytes beyond the sets' own points.
#[derive(Debug, Clone, Copy)]
struct CopyRoom {
    free: u64,
    budget: u64,
}

/// Copies for each candidate (0: none), shared as `share` says.
fn plan_copies(candidates: &[CopyCandidate], room: CopyRoom, share: CopyShare) -> Vec<u32> {
    let mut plan = vec![0; candidates.len()];
    loop {
        let mut grew = false;
        for (i, candidate) in candidates.iter().enumerate() {
            // In order, a set takes every step that fits before the next.
            while let Some(next) = next_copies(candidate, plan[i]) {
                let before = std::mem::replace(&mut plan[i], next);
                if !plan_fits(candidates, &plan, room) {
                    plan[i] = before;
                    break;
                }
                grew = true;
                if share == CopyShare::Spread {
                    break;
                }
            }
        }
        if !grew || share == CopyShare::InOrder {
            return plan;
        }
    }
}

/// The next step up from `copies`: the fewest copies that give one bucket
/// set fewer, within the candidate's limit on sets (whole copies always).
fn next_copies(candidate: &CopyCandidate, copies: u32) -> Option<u32> {
    ((copies + 1).max(MIN_PARTIAL_COPIES)..=candidate.windows)
        .filter_map(|fit| copies_that_fit(candidate.windows, fit, candidate.most_sets))
        .find(|&next| next > copies)
}

/// Whether `plan` fits `room`: the sets are made in order, each beside the
/// copies made before it (its own points freed only after), and what all
/// copies take beyond the points stays within the budget.
fn plan_fits(candidates: &[CopyCandidate], plan: &[u32], room: CopyRoom) -> bool {
    let mut kept: u64 = 0;
    for (candidate, &copies) in candidates.iter().zip(plan) {
        if copies < MIN_PARTIAL_COPIES {
            continue;
        }
        let making = u64::from(copies).saturating_mul(candidate.per_copy);
        if kept.saturating_add(making) > room.free {
            return false;
        }
        kept = kept.saturating_add(making - candidate.per_copy);
    }
    kept <= room.budget
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
    use super::{
        copies_that_fit, most_bucket_sets, plan_copies, plan_fits, CopyCandidate, CopyRoom,
        CopyShare,
    };

    const MIB: u64 = 1 << 20;

    /// A 2^24-point set at 20-bit copies (13 windows, up to 16 bucket sets).
    fn set_of_2_24(name: &'static str, g2: bool) -> CopyCandidate {
        CopyCandidate {
            name,
            bits: None,
            windows: 13,
            most_sets: most_bucket_sets(1 << 24, 20),
            per_copy: if g2 { 3072 } else { 1536 } * MIB,
        }
    }

    /// The field circuit's key at 2^24, made in add_shifted_copies' order.
    fn key_of_2_24() -> Vec<CopyCandidate> {
        vec![
            set_of_2_24("b_g2", true),
            set_of_2_24("h", false),
            set_of_2_24("a", false),
            set_of_2_24("b_g1", false),
            set_of_2_24("l", false),
        ]
    }

    /// Free memory beyond the reserve on an H100 with that key resident
    /// (43678 MiB free after b_g2's and h's copies, 40907 MiB reserved).
    const H100_ROOM: CopyRoom = CopyRoom {
        free: (43678 + 6 * 3072 + 6 * 1536 - 40907) * MIB,
        budget: u64::MAX,
    };

    #[test]
    fn copies_spread_over_every_set_before_any_gets_all() {
        let key = key_of_2_24();
        // What the H100 logged with the sets served in order.
        assert_eq!(
            plan_copies(&key, H100_ROOM, CopyShare::InOrder),
            [7, 7, 0, 0, 0]
        );
        assert_eq!(plan_copies(&key, H100_ROOM, CopyShare::Spread), [4; 5]);
        // With room for everything both give everything.
        let ample = CopyRoom {
            free: u64::MAX,
            budget: u64::MAX,
        };
        for share in [CopyShare::Spread, CopyShare::InOrder] {
            assert_eq!(plan_copies(&key, ample, share), [13; 5]);
        }
        // Twice the H100's room: every set rises together.
        let double = CopyRoom {
            free: 2 * H100_ROOM.free,
            ..H100_ROOM
        };
        let plan = plan_copies(&key, double, CopyShare::Spread);
        assert_eq!(plan, [7; 5]);
        assert!(plan_fits(&key, &plan, double));
    }

    #[test]
    fn a_plan_keeps_to_the_budget_and_the_room_to_make_each_set() {
        let key = key_of_2_24();
        let budget = CopyRoom {
            free: u64::MAX,
            budget: 10 * 1536 * MIB,
        };
        for share in [CopyShare::Spread, CopyShare::InOrder] {
            let plan = plan_copies(&key, budget, share);
            let beyond: u64 = key
                .iter()
                .zip(&plan)
                .map(|(set, &copies)| u64::from(copies.saturating_sub(1)) * set.per_copy)
                .sum();
            assert!(beyond <= budget.budget, "{share:?}: {plan:?}");
            assert!(plan.iter().any(|&copies| copies > 0), "{share:?}");
        }
        // A set is made beside its points: room for its copies' bytes
        // beyond them is not enough.
        let one = [set_of_2_24("a", false)];
        let tight = |copies: u64| CopyRoom {
            free: copies * 1536 * MIB,
            budget: u64::MAX,
        };
        assert_eq!(plan_copies(&one, tight(4), CopyShare::Spread), [4]);
        assert_eq!(plan_copies(&one, tight(3), CopyShare::InOrder), [3]);
        assert_eq!(plan_copies(&one, tight(1), CopyShare::Spread), [0]);
    }

    #[test]
    fn small_sets_take_all_their_copies_or_none() {
        let small = CopyCandidate {
            name: "h",
            bits: None,
            windows: 16,
            most_sets: 1,
            per_copy: 10 * MIB,
        };
        let none = CopyCandidate {
            windows: 0,
            ..small.clone()
        };
        let room = |copies: u64| CopyRoom {
            free: copies * 10 * MIB,
            budget: u64::MAX,
        };
        let sets = [small.clone(), none, small];
        assert_eq!(plan_copies(&sets, room(15), CopyShare::Spread), [0, 0, 0]);
        assert_eq!(plan_copies(&sets, room(16), CopyShare::Spread), [16, 0, 0]);
        assert_eq!(plan_copies(&sets, room(31), CopyShare::Spread), [16, 0, 16]);
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
