//! GPU NTTs against the CPU's on fresh random inputs and edge values.
//! Prints `skipped: no CUDA device` where there is none.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;

use blstrs::Scalar;
use ff::Field;
use groth16_gpu::backend::cpu::Domain;
use groth16_gpu::backend::cuda::{ntt, NttKind};
use rand_core::{OsRng, RngCore, SeedableRng};

fn cpu(values: &[Scalar], kind: NttKind) -> Vec<Scalar> {
    let domain = Domain::new(values.len()).unwrap();
    let mut v = values.to_vec();
    match kind {
        NttKind::Forward => domain.ntt(&mut v),
        NttKind::Inverse => domain.intt(&mut v),
        NttKind::CosetForward => domain.coset_ntt(&mut v),
        NttKind::CosetInverse => domain.coset_intt(&mut v),
    }
    v
}

const KINDS: [NttKind; 4] = [
    NttKind::Forward,
    NttKind::Inverse,
    NttKind::CosetForward,
    NttKind::CosetInverse,
];

#[test]
fn gpu_ntt_matches_cpu_on_random_inputs() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let seed = OsRng.next_u64();
    println!("seed {seed}");
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    // Every count of passes and of stages a pass (tile_passes.cuh: up to
    // eight a pass, tiles of 2^10), odd and even.
    for log in [0u32, 1, 2, 3, 5, 8, 9, 10, 11, 13, 16, 17, 20, 21] {
        let values: Vec<Scalar> = (0..1usize << log)
            .map(|_| Scalar::random(&mut rng))
            .collect();
        for kind in KINDS {
            let mut gpu = values.clone();
            let ms = ntt(&guard, &mut gpu, kind).unwrap();
            assert!(gpu == cpu(&values, kind), "2^{log} {kind:?}");
            println!("2^{log} {kind:?}: {ms:.3} ms");
        }
    }
}

#[test]
fn gpu_ntt_edge_values_and_round_trip() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let n = 1 << 12;
    for fill in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE] {
        let values = vec![fill; n];
        for kind in KINDS {
            let mut gpu = values.clone();
            ntt(&guard, &mut gpu, kind).unwrap();
            assert!(gpu == cpu(&values, kind), "{fill:?} {kind:?}");
        }
    }
    let values: Vec<Scalar> = (0..n).map(|_| Scalar::random(OsRng)).collect();
    let mut v = values.clone();
    ntt(&guard, &mut v, NttKind::CosetForward).unwrap();
    ntt(&guard, &mut v, NttKind::CosetInverse).unwrap();
    assert!(v == values);
}

#[test]
fn gpu_ntt_refuses_bad_lengths() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    for n in [0usize, 3, 1000] {
        let mut v = vec![Scalar::ONE; n];
        assert!(ntt(&guard, &mut v, NttKind::Forward).is_err(), "length {n}");
    }
    // The device stays usable after the refusals.
    let mut v = vec![Scalar::ONE; 8];
    ntt(&guard, &mut v, NttKind::Forward).unwrap();
}

#[test]
fn gpu_ntt_at_2_pow_24_matches_cpu() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let n = 1 << 24;
    let values: Vec<Scalar> = (0..n as u64).map(|i| Scalar::from(i * 7 + 3)).collect();
    let mut gpu = values.clone();
    let ms = ntt(&guard, &mut gpu, NttKind::CosetForward).unwrap();
    println!("2^24 coset NTT with transfers: {ms:.1} ms");
    assert!(gpu == cpu(&values, NttKind::CosetForward));
}
