//! Two lanes of one device sharing a resident base set at once: the split
//! prover's worker threads do this under the caller's one guard, and each
//! lane may run its own MSM tuning. Lanes are crate-private, so these
//! checks live inside the crate.

use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_core::OsRng;

use super::{G2FirstLevel, GpuCurve, MsmTuning, ResidentBases};
use crate::backend::cpu::msm;
use crate::device::{DeviceGuard, DeviceMutex};

fn random_bases(n: usize) -> Vec<G1Affine> {
    (0..n)
        .map(|_| G1Projective::random(OsRng).to_affine())
        .collect()
}

/// `n` random points of either group: runs of `start + k step`, cheap
/// additions instead of a scalar multiplication a point.
fn random_points<G>(n: usize) -> Vec<G>
where
    G: PrimeCurveAffine,
    G::Curve: Curve<AffineRepr = G>,
{
    let step = G::Curve::random(OsRng);
    let mut point = G::Curve::random(OsRng);
    let projective: Vec<G::Curve> = (0..n)
        .map(|_| {
            point += step;
            point
        })
        .collect();
    let mut affine = vec![G::identity(); n];
    G::Curve::batch_normalize(&projective, &mut affine);
    affine
}

/// Device 0, or None after printing that the test skipped.
fn first_device_or_skip() -> Option<&'static DeviceMutex> {
    match DeviceMutex::all() {
        Ok(devices) if !devices.is_empty() => Some(&devices[0]),
        Ok(_) => {
            println!("skipped: no CUDA device");
            None
        }
        Err(error) => {
            println!("skipped: no CUDA device ({error})");
            None
        }
    }
}

fn random_scalars(n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(OsRng)).collect()
}

#[test]
fn two_lanes_share_one_base_set() {
    let Some(device) = first_device_or_skip() else {
        return;
    };
    let guard = device.lock();
    let n = 3000;
    let bases = random_bases(n + 9);
    let resident = ResidentBases::upload(&guard, &bases).expect("upload bases");
    let (scalars, other) = (random_scalars(n), random_scalars(n));
    let want = msm(&bases[9..], &scalars).unwrap();
    let want_other = msm(&bases[..n], &other).unwrap();
    // One lane stages its scalars, the other (slots busy) may go the
    // driver's way; both sums are right.
    std::thread::scope(|scope| {
        let resident = &resident;
        let runs: Vec<_> = [(&scalars, 9, want), (&other, 0, want_other)]
            .into_iter()
            .map(|(scalars, first, want)| {
                let device = guard.device().duplicate().expect("second handle");
                scope.spawn(move || {
                    let lane = DeviceGuard::lane(&device);
                    for _ in 0..3 {
                        let got = resident.msm_range(&lane, first, scalars).unwrap();
                        assert_eq!(got, want, "lane from base {first}");
                    }
                })
            })
            .collect();
        for run in runs {
            run.join().unwrap();
        }
    });
}

/// Two tunings that differ in every setting a report shows: chunks, window
/// bits, G2's layout (so the reduction's pairs) and the first-level block.
fn two_tunings() -> [MsmTuning; 2] {
    [
        MsmTuning {
            chunk_cap: Some(4096),
            window_bits: Some(10),
            g2_first_level: Some(G2FirstLevel::WholePoints),
            first_level_threads: Some(100),
            ..MsmTuning::default()
        },
        MsmTuning {
            chunk_cap: Some(7000),
            window_bits: Some(13),
            g2_first_level: Some(G2FirstLevel::Pairs),
            first_block: Some(64),
            inline_pieces: Some(2),
            ..MsmTuning::default()
        },
    ]
}

/// Runs `rounds` MSMs of `scalars` over `resident` on a lane of its own
/// with `tuning`, each against `want`, and checks that each call reports
/// `tuning`'s own settings.
fn run_tuned<G: GpuCurve>(
    lane: &DeviceGuard<'_>,
    resident: &ResidentBases<G>,
    scalars: &[Scalar],
    want: G::Curve,
    tuning: &MsmTuning,
) where
    G::Curve: Send + Sync,
{
    for _ in 0..3 {
        let (got, timing) = resident.msm_range_tuned(lane, 0, scalars, tuning).unwrap();
        assert_eq!(got, want, "{tuning:?}");
        let run = timing.run;
        let cap = tuning.chunk_cap.unwrap();
        assert_eq!(
            run.chunks as usize,
            scalars.len().div_ceil(cap),
            "{tuning:?}"
        );
        assert_eq!(run.chunk_points, cap, "{tuning:?}");
        assert_eq!(Some(run.window_bits), tuning.window_bits, "{tuning:?}");
        assert_eq!(timing.window_bits, run.window_bits);
        assert_eq!(run.copies, 1);
        match tuning.first_block {
            Some(block) => assert_eq!(run.first_block, block),
            // 100 threads kept: the blocks grow to their longest.
            None => assert_eq!(run.first_block, 512),
        }
        assert_eq!(run.inline_pieces, tuning.inline_pieces.unwrap_or(8));
        if G::IS_G2 {
            let layout = tuning.g2_first_level.unwrap();
            assert_eq!(run.g2_first_level, Some(layout));
            assert_eq!(run.pair_reduction, layout != G2FirstLevel::WholePoints);
        } else {
            assert_eq!((run.g2_first_level, run.pair_reduction), (None, false));
        }
    }
}

/// Two lanes of one device at once, each with its own tuning over the same
/// G1 and G2 base sets: every sum right, every call run (and reported) as
/// its own lane's tuning says, neither taking the other's; the bases' own
/// tuning (the default) untouched.
#[test]
fn two_lanes_run_their_own_tunings_at_once() {
    let Some(device) = first_device_or_skip() else {
        return;
    };
    let guard = device.lock();
    let n = 20_000;
    let g1 = random_points::<G1Affine>(n);
    let g2 = random_points::<G2Affine>(n);
    let resident_g1 = ResidentBases::upload(&guard, &g1).expect("upload G1 bases");
    let resident_g2 = ResidentBases::upload(&guard, &g2).expect("upload G2 bases");
    let scalars = random_scalars(n);
    let want_g1 = msm(&g1, &scalars).unwrap();
    let want_g2 = msm(&g2, &scalars).unwrap();
    std::thread::scope(|scope| {
        let (resident_g1, resident_g2, scalars) = (&resident_g1, &resident_g2, &scalars);
        let runs: Vec<_> = two_tunings()
            .into_iter()
            .map(|tuning| {
                let device = guard.device().duplicate().expect("second handle");
                scope.spawn(move || {
                    let lane = DeviceGuard::lane(&device);
                    for _ in 0..2 {
                        run_tuned(&lane, resident_g1, scalars, want_g1, &tuning);
                        run_tuned(&lane, resident_g2, scalars, want_g2, &tuning);
                    }
                })
            })
            .collect();
        for run in runs {
            run.join().unwrap();
        }
    });
    assert_eq!(*resident_g1.tuning(), MsmTuning::default());
    let (got, timing) = resident_g2.msm_timed(&guard, &scalars).unwrap();
    assert_eq!(got, want_g2);
    assert_eq!(timing.run.chunks, 1);
    assert_eq!(timing.run.g2_first_level, Some(G2FirstLevel::Pairs128));
    assert!(timing.run.pair_reduction);
}
