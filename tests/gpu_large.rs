//! GPU MSMs and NTTs at 2^27, the size of a Filecoin PoRep partition's
//! (about 130 million constraints): the sizes where counts pass 2^31 and
//! an MSM runs in more than one chunk. Each test skips, saying so, where
//! there is no device or its memory cannot hold the inputs.
//!
//! A blstrs MSM of 2^27 points would take minutes, so the bases repeat a
//! pool of `POOL` random points: bases[i] = pool[i % POOL], and the expected
//! sum is Σ_j (Σ_{i ≡ j} scalars[i]) pool[j], a small MSM of summed scalars.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;

use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use ff::Field;
use groth16_gpu::backend::cpu::Domain;
use groth16_gpu::backend::cuda::{ntt, GpuCurve, NttKind, ResidentBases};
use groth16_gpu::device::DeviceMutex;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::sync::Mutex;
use std::time::Instant;

const LOG_N: u32 = 27;
/// Distinct points behind the bases: prime, so the repeats do not line up
/// with chunk or window boundaries.
const POOL: usize = 1021;

/// One test at a time: each needs tens of GB of host and device memory.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn seeded() -> ChaCha20Rng {
    let seed = rand::thread_rng().next_u64();
    println!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// The first device, if its memory holds `bytes` with room to spare.
fn device_with_memory(bytes: u64, what: &str) -> Option<&'static DeviceMutex> {
    let device = gpu::devices_or_skip()?.first()?;
    let total = device.lock().device().total_memory();
    if total < bytes {
        println!("skipped: {what} needs {bytes} bytes of device memory, the device has {total}");
        return None;
    }
    Some(device)
}

/// `n` random scalars, generated in parallel from seeds drawn from `rng`.
fn random_scalars(n: usize, rng: &mut impl RngCore) -> Vec<Scalar> {
    const PIECE: usize = 1 << 16;
    let seeds: Vec<u64> = (0..n.div_ceil(PIECE)).map(|_| rng.next_u64()).collect();
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(PIECE)
        .zip(seeds)
        .for_each(|(piece, seed)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            piece.iter_mut().for_each(|s| *s = Scalar::random(&mut rng));
        });
    out
}

/// Σ_k scalars[k] pool[(first + k) % POOL], by summing the scalars of each
/// pool slot first: what an MSM over bases[first..] equals.
fn pool_sum<C>(pool: &[C], first: usize, scalars: &[Scalar]) -> C
where
    C: Group<Scalar = Scalar>,
{
    const PIECE: usize = POOL << 10;
    let mut sums = scalars
        .par_chunks(PIECE)
        .map(|piece| {
            let mut sums = vec![Scalar::ZERO; POOL];
            for (k, s) in piece.iter().enumerate() {
                sums[k % POOL] += s;
            }
            sums
        })
        .reduce(
            || vec![Scalar::ZERO; POOL],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    // Scalar k sits on slot (first + k) % POOL (PIECE is a multiple of POOL).
    sums.rotate_right(first % POOL);
    pool.iter()
        .zip(&sums)
        .fold(C::identity(), |acc, (p, s)| acc + *p * s)
}

/// The oracle itself, against blstrs on a size it can afford (no GPU).
#[test]
fn pool_sum_matches_blstrs_msm() {
    let mut rng = seeded();
    let pool: Vec<G1Projective> = (0..POOL).map(|_| G1Projective::random(&mut rng)).collect();
    let n = 3 * POOL + 17;
    let scalars = random_scalars(n, &mut rng);
    for first in [0, 5, POOL + 3] {
        let bases: Vec<G1Projective> = (first..first + n).map(|i| pool[i % POOL]).collect();
        let want = G1Projective::multi_exp(&bases, &scalars);
        assert_eq!(pool_sum(&pool, first, &scalars), want, "from {first}");
    }
}

/// An MSM of 2^27 points on the device against the pool sum on the CPU.
fn check_msm_of_2_pow_27<G>(what: &str)
where
    G: GpuCurve + PrimeCurveAffine<Scalar = Scalar> + Send + Sync,
    G::Curve: Curve<AffineRepr = G> + Group<Scalar = Scalar> + Send + Sync,
{
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1usize << LOG_N;
    let point_bytes = std::mem::size_of::<G>() as u64;
    // Bases, the scalars' copy, and scratch for a chunk or two.
    let needed = point_bytes * n as u64 * 2 + (32 << 30);
    let Some(device) = device_with_memory(needed, what) else {
        return;
    };
    let mut rng = seeded();
    let pool_curve: Vec<G::Curve> = (0..POOL).map(|_| G::Curve::random(&mut rng)).collect();
    let mut pool = vec![G::identity(); POOL];
    G::Curve::batch_normalize(&pool_curve, &mut pool);
    let bases: Vec<G> = (0..n).into_par_iter().map(|i| pool[i % POOL]).collect();
    let scalars = random_scalars(n, &mut rng);
    let want = pool_sum(&pool_curve, 0, &scalars);

    let guard = device.lock();
    let resident = ResidentBases::upload(&guard, &bases).expect("upload 2^27 bases");
    drop(bases);
    for run in 0..2 {
        let start = Instant::now();
        let got = resident.msm(&guard, &scalars).expect("MSM of 2^27 points");
        println!(
            "{what} MSM 2^{LOG_N}, run {run}: {:.0} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        assert_eq!(got, want, "{what} MSM of 2^{LOG_N} points");
    }
    // Half the points, from the middle: one chunk, another geometry.
    let half = n / 2;
    let got = resident
        .msm_range_direct(&guard, half, &scalars[half..])
        .expect("MSM of 2^26 points");
    let tail_want = pool_sum(&pool_curve, half, &scalars[half..]);
    assert_eq!(got, tail_want, "{what} MSM of the second half");
}

#[test]
fn gpu_msm_g1_of_2_pow_27_points_is_right() {
    check_msm_of_2_pow_27::<G1Affine>("G1");
}

#[test]
fn gpu_msm_g2_of_2_pow_27_points_is_right() {
    check_msm_of_2_pow_27::<G2Affine>("G2");
}

#[test]
fn gpu_ntt_of_2_pow_27_matches_cpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1usize << LOG_N;
    let Some(device) = device_with_memory(4 * 32 * n as u64, "an NTT of 2^27") else {
        return;
    };
    let mut rng = seeded();
    let values = random_scalars(n, &mut rng);
    let domain = Domain::new(n).expect("domain of 2^27");
    let guard = device.lock();
    for kind in [NttKind::CosetForward, NttKind::Inverse] {
        let mut gpu = values.clone();
        let ms = ntt(&guard, &mut gpu, kind).expect("NTT of 2^27");
        println!("{kind:?} NTT 2^{LOG_N} with transfers: {ms:.0} ms");
        let mut cpu = values.clone();
        match kind {
            NttKind::CosetForward => domain.coset_ntt(&mut cpu),
            _ => domain.intt(&mut cpu),
        }
        assert!(
            gpu == cpu,
            "{kind:?} NTT of 2^{LOG_N} differs from the CPU's"
        );
    }
}
