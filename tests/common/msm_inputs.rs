//! What the MSM tests share (included by path, beside common/gpu.rs as
//! `gpu`): seeded generators, random and awkward bases, special scalars,
//! blstrs' own sums, field words, and each device in turn under the memory lock (common/gpu.rs).
#![allow(dead_code)]

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use groth16_gpu::device::DeviceGuard;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use crate::gpu;

/// A generator from a fresh seed, printed so a failure can be replayed.
pub fn seeded() -> ChaCha20Rng {
    let seed = rand::thread_rng().next_u64();
    println!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// `n` random points: runs of `start + k step` (cheap additions instead of a
/// scalar multiplication per point), normalized in batches.
pub fn random_bases<G>(n: usize, rng: &mut impl RngCore) -> Vec<G>
where
    G: PrimeCurveAffine + Send + Sync,
    G::Curve: Curve<AffineRepr = G> + Send + Sync,
{
    let seeds: Vec<u64> = (0..n.div_ceil(1024)).map(|_| rng.next_u64()).collect();
    let mut out = vec![G::identity(); n];
    out.par_chunks_mut(1024)
        .zip(seeds)
        .for_each(|(chunk, seed)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let step = G::Curve::random(&mut rng);
            let mut point = G::Curve::random(&mut rng);
            let projective: Vec<G::Curve> = (0..chunk.len())
                .map(|_| {
                    point += step;
                    point
                })
                .collect();
            G::Curve::batch_normalize(&projective, chunk);
        });
    out
}

pub fn random_scalars(n: usize, rng: &mut impl RngCore) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

/// blstrs' own Σ scalars[i] bases[i].
pub fn expected_g1(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    if bases.is_empty() {
        return G1Projective::identity(); // blst's multi_exp indexes [0]
    }
    let projective: Vec<G1Projective> = bases.par_iter().map(|b| b.to_curve()).collect();
    G1Projective::multi_exp(&projective, scalars)
}

pub fn expected_g2(bases: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    if bases.is_empty() {
        return G2Projective::identity();
    }
    let projective: Vec<G2Projective> = bases.par_iter().map(|b| b.to_curve()).collect();
    G2Projective::multi_exp(&projective, scalars)
}

pub fn expected_selected<G: PrimeCurveAffine>(bases: &[G], bits: &[bool]) -> G::Curve {
    bases
        .iter()
        .zip(bits)
        .filter(|(_, &bit)| bit)
        .fold(G::Curve::identity(), |acc, (b, _)| acc + *b)
}

/// The special scalar sets every MSM must get right.
pub fn special_scalars(n: usize, rng: &mut impl RngCore) -> Vec<(&'static str, Vec<Scalar>)> {
    let r_minus_1 = -Scalar::ONE;
    vec![
        ("all zero", vec![Scalar::ZERO; n]),
        ("all one", vec![Scalar::ONE; n]),
        ("all r-1", vec![r_minus_1; n]),
        ("one repeated random", vec![Scalar::random(&mut *rng); n]),
        (
            "mixed 0/1/r-1/random",
            (0..n)
                .map(|i| match i % 4 {
                    0 => Scalar::ZERO,
                    1 => Scalar::ONE,
                    2 => r_minus_1,
                    _ => Scalar::random(&mut *rng),
                })
                .collect(),
        ),
    ]
}

/// Random bases with identities and repeats (and a point and its negation).
pub fn awkward_bases<G>(n: usize, rng: &mut impl RngCore) -> Vec<G>
where
    G: PrimeCurveAffine + Send + Sync,
    G::Curve: Curve<AffineRepr = G> + Send + Sync,
{
    let mut bases = random_bases::<G>(n, rng);
    for i in 0..n {
        match i % 5 {
            1 => bases[i] = G::identity(),
            2 if i >= 2 => bases[i] = bases[i - 2],
            3 if i >= 3 => bases[i] = -bases[i - 3],
            _ => {}
        }
    }
    bases
}

/// Runs `check` on every device with the memory lock held for reading and
/// one seeded generator across the devices; prints that it skipped where
/// there is no device.
pub fn on_each_device(mut check: impl FnMut(&DeviceGuard<'_>, &mut ChaCha20Rng)) {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    for device in devices {
        check(&device.lock(), &mut rng);
    }
}

pub fn fp_words(x: &Fp) -> Vec<u64> {
    // SAFETY: Fp is repr(transparent) over blst_fp, 6 u64 words.
    unsafe { std::slice::from_raw_parts((x as *const Fp).cast::<u64>(), 6) }.to_vec()
}

pub fn fp2_words(x: &Fp2) -> Vec<u64> {
    [fp_words(&x.c0()), fp_words(&x.c1())].concat()
}

/// Sets the bits past the first `n` in the last word: they select nothing.
pub fn with_stray_bits(mut words: Vec<u64>, n: usize) -> Vec<u64> {
    if n % 64 != 0 {
        if let Some(last) = words.last_mut() {
            *last |= !0u64 << (n % 64);
        }
    }
    words
}

/// A scalar whose every `bits`-bit window holds the digit 1 (bits must
/// divide 8 and 256 / bits windows stay below r): every point then lands
/// in bucket 1 of every copy, the heaviest bucket copies can make.
pub fn ones_in_every_window(bits: u32) -> Scalar {
    let byte = (0..8 / bits).fold(0u8, |acc, k| acc | (1 << (k * bits)));
    let mut repr = [byte; 32];
    repr[31] &= 0x3f; // below r whatever the pattern
    Scalar::from_repr_vartime(repr).expect("below r")
}
