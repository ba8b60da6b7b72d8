//! MSM inputs the GPU tests share (included by path): seeded generators,
//! random and awkward bases, special scalars, and blstrs' own sums.
#![allow(dead_code)]

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

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
