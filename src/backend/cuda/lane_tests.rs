//! Two lanes of one device sharing a resident base set at once: the split
//! prover's worker threads do this under the caller's one guard. Lanes are
//! crate-private, so this check lives inside the crate.

use blstrs::{G1Affine, G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::OsRng;

use super::ResidentBases;
use crate::backend::cpu::msm;
use crate::device::{DeviceGuard, DeviceMutex};

fn random_bases(n: usize) -> Vec<G1Affine> {
    (0..n)
        .map(|_| G1Projective::random(OsRng).to_affine())
        .collect()
}

fn random_scalars(n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(OsRng)).collect()
}

#[test]
fn two_lanes_share_one_base_set() {
    let devices = match DeviceMutex::all() {
        Ok(devices) if !devices.is_empty() => devices,
        Ok(_) => return println!("skipped: no CUDA device"),
        Err(error) => return println!("skipped: no CUDA device ({error})"),
    };
    let guard = devices[0].lock();
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
