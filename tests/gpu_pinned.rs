//! `PinnedVec`: scalar buffers page-locked in place, which the GPU prover
//! keeps for a proof's MSM scalars. Each GPU test prints `skipped: no CUDA
//! device` and returns where there is none; the host test runs everywhere.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;

use blstrs::{G1Affine, G1Projective, Scalar};
use ff::Field;
use groth16_gpu::backend::cuda::{is_pinned, PinnedVec, ResidentBases};
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn seeded_rng() -> ChaCha20Rng {
    let seed: u64 = rand::random();
    println!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

#[test]
fn an_unpinned_vector_fills_and_reads_like_a_vec() {
    let mut values = PinnedVec::from(Vec::with_capacity(4));
    assert!(!values.is_pinned());
    values.fill(|v| v.extend([Scalar::ONE, Scalar::ZERO]));
    assert_eq!(&values[..], &[Scalar::ONE, Scalar::ZERO]);
    values.as_mut_slice()[1] = Scalar::ONE;
    assert_eq!(&values[..], &[Scalar::ONE, Scalar::ONE]);
    values.clear();
    assert!(values.is_empty());
    assert!(values.capacity() >= 4);
}

#[test]
fn pinned_scalars_stay_locked_across_refills_and_feed_an_msm() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded_rng();
    let n = (1 << 16) + 7;
    let bases: Vec<G1Affine> = (0..n)
        .map(|_| G1Projective::random(&mut rng).to_affine())
        .collect();
    for device in devices {
        let guard = device.lock();
        let resident = ResidentBases::upload(&guard, &bases).expect("upload bases");
        // Each round locks a new allocation, often at the address the last
        // round's freed: locking it again only works if the drop unlocked
        // the memory before freeing it.
        for round in 0..6 {
            let mut pinned = PinnedVec::new(&guard, n);
            assert!(pinned.is_pinned(), "round {round}");
            for refill in 0..2 {
                let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
                pinned.clear();
                pinned.fill(|values| values.extend_from_slice(&scalars));
                assert!(pinned.is_pinned() && is_pinned(&pinned), "{round}/{refill}");
                assert_eq!(&pinned[..], &scalars[..]);
                let want = G1Projective::multi_exp(
                    &bases.iter().map(|&p| p.into()).collect::<Vec<_>>(),
                    &scalars,
                );
                let got = resident
                    .msm(&guard, &pinned)
                    .expect("MSM from pinned scalars");
                assert_eq!(got, want, "round {round}, refill {refill}");
            }
        }
    }
}

#[test]
fn growing_past_capacity_gives_the_lock_up() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let mut pinned = PinnedVec::new(&guard, 100);
    assert!(pinned.is_pinned());
    let capacity = pinned.capacity();
    pinned.fill(|values| values.resize(capacity + 10_000, Scalar::ONE));
    assert!(!pinned.is_pinned());
    assert!(!is_pinned(&pinned), "the moved vector is ordinary memory");
    assert_eq!(pinned.len(), capacity + 10_000);
    assert!(pinned.iter().all(|value| *value == Scalar::ONE));
    // The first allocation was unlocked when the lock was given up.
    assert!(PinnedVec::new(&guard, 100).is_pinned());
}
