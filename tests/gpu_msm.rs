//! MSM and batch addition of the CUDA backend against blstrs.
//!
//! `reference_*` tests run the GPU code's arithmetic and bucket logic on the
//! CPU (no GPU needed). `gpu_*` tests run on every CUDA device and print
//! `skipped: no CUDA device` where there is none. Inputs are fresh random
//! values each run; the seed is printed so a failure can be replayed.
#![cfg(feature = "cuda")]

#[path = "common/env.rs"]
mod env;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use env::env_or;
use ff::{Field, PrimeField};
use groth16_gpu::backend::cuda::reference::{self, FieldOp};
use groth16_gpu::backend::cuda::{
    batch_add_g1, batch_add_g2, is_pinned, msm_g1, msm_g2, pack_bits, reserve_device_memory,
    set_msm_window_bits_for_tests, G2FirstLevel, GpuCurve, PinnedStaging, ResidentBases,
    ScalarUploader,
};
use groth16_gpu::device::{Device, DeviceGuard, DeviceMutex};
use group::prime::PrimeCurveAffine;
use msm_inputs::{
    awkward_bases, exclusive_device_memory, expected_g1, expected_g2, expected_selected, fp2_words,
    fp_words, on_each_device, random_bases, random_scalars, seeded, shared_device_memory,
    special_scalars, Knob,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

#[test]
fn reference_field_ops_match_blstrs() {
    let mut rng = seeded();
    for _ in 0..200 {
        let (a, b) = (Fp::random(&mut rng), Fp::random(&mut rng));
        let (wa, wb) = (fp_words(&a), fp_words(&b));
        assert_eq!(
            reference::field_op(FieldOp::FpMul, &wa, &wb).unwrap(),
            fp_words(&(a * b))
        );
        assert_eq!(
            reference::field_op(FieldOp::FpAdd, &wa, &wb).unwrap(),
            fp_words(&(a + b))
        );
        assert_eq!(
            reference::field_op(FieldOp::FpSub, &wa, &wb).unwrap(),
            fp_words(&(a - b))
        );
        let (x, y) = (Fp2::random(&mut rng), Fp2::random(&mut rng));
        let (wx, wy) = (fp2_words(&x), fp2_words(&y));
        assert_eq!(
            reference::field_op(FieldOp::Fp2Mul, &wx, &wy).unwrap(),
            fp2_words(&(x * y))
        );
        assert_eq!(
            reference::field_op(FieldOp::Fp2Sqr, &wx, &wy).unwrap(),
            fp2_words(&x.square())
        );
    }
    // Edge operands: 0, 1, p-1, (p+1)/2 and its negation, 2^64 - 1.
    let minus_one = -Fp::ONE;
    let half = Fp::from(2u64).invert().unwrap();
    let word = Fp::from(u64::MAX);
    let edges = [Fp::ZERO, Fp::ONE, minus_one, half, -half, word];
    // Fp2 from every pair of them: Karatsuba's a0 b0 - a1 b1 takes both
    // signs, and its operand sums reach 2p - 2.
    let edges2: Vec<Fp2> = every_pair(&edges).map(|(a, b)| Fp2::new(a, b)).collect();
    for (x, y) in every_pair(&edges2) {
        let (wx, wy) = (fp2_words(&x), fp2_words(&y));
        assert_eq!(
            reference::field_op(FieldOp::Fp2Mul, &wx, &wy).unwrap(),
            fp2_words(&(x * y)),
            "{x:?} * {y:?}"
        );
    }
    for x in &edges2 {
        let wx = fp2_words(x);
        assert_eq!(
            reference::field_op(FieldOp::Fp2Sqr, &wx, &wx).unwrap(),
            fp2_words(&x.square())
        );
    }
    for a in edges
        .iter()
        .copied()
        .chain((0..200).map(|_| Fp::random(&mut rng)))
    {
        let wa = fp_words(&a);
        assert_eq!(
            reference::field_op(FieldOp::FpSqr, &wa, &wa).unwrap(),
            fp_words(&a.square()),
            "{a:?} squared"
        );
    }
    for (a, b) in every_pair(&edges) {
        let (wa, wb) = (fp_words(&a), fp_words(&b));
        assert_eq!(
            reference::field_op(FieldOp::FpMul, &wa, &wb).unwrap(),
            fp_words(&(a * b))
        );
        assert_eq!(
            reference::field_op(FieldOp::FpAdd, &wa, &wb).unwrap(),
            fp_words(&(a + b))
        );
        assert_eq!(
            reference::field_op(FieldOp::FpSub, &wa, &wb).unwrap(),
            fp_words(&(a - b))
        );
    }
}

fn scalar_words(s: &Scalar) -> Vec<u64> {
    // SAFETY: Scalar is repr(transparent) over blst_fr, 4 u64 words.
    unsafe { std::slice::from_raw_parts((s as *const Scalar).cast::<u64>(), 4) }.to_vec()
}

fn canonical_words(s: &Scalar) -> Vec<u64> {
    s.to_repr()
        .as_ref()
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Fp2 products as a pair of threads computes them (each lane one sum of
/// two products, fp2_pairs.cuh), both halves on the host; squares go
/// through the same product.
#[test]
fn reference_pair_fp2_ops_match_blstrs() {
    let mut rng = seeded();
    // 0, 1, p - 1, (p + 1) / 2 and its negation, 2^64 - 1: the lane-0 term
    // -x1 y1 at its extremes, and sums of products near 2 p^2.
    let half = Fp::from(2u64).invert().unwrap();
    let edges = [Fp::ZERO, Fp::ONE, -Fp::ONE, half, -half, Fp::from(u64::MAX)];
    let mut values: Vec<Fp2> = every_pair(&edges).map(|(a, b)| Fp2::new(a, b)).collect();
    values.extend((0..64).map(|_| Fp2::random(&mut rng)));
    for (x, y) in every_pair(&values) {
        let (wx, wy) = (fp2_words(&x), fp2_words(&y));
        assert_eq!(
            reference::field_op(FieldOp::Fp2PairMul, &wx, &wy).unwrap(),
            fp2_words(&(x * y)),
            "{x:?} * {y:?}"
        );
    }
    for x in &values {
        let wx = fp2_words(x);
        assert_eq!(
            reference::field_op(FieldOp::Fp2PairMul, &wx, &wx).unwrap(),
            fp2_words(&x.square()),
            "{x:?} squared"
        );
    }
}

/// (a, b) for every a and b of `items`, both orders and equal pairs included.
fn every_pair<T: Copy>(items: &[T]) -> impl Iterator<Item = (T, T)> + '_ {
    items
        .iter()
        .flat_map(move |&a| items.iter().map(move |&b| (a, b)))
}

#[test]
fn reference_fr_multiplication_matches_blstrs() {
    let mut rng = seeded();
    let specials = [
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(2u64).invert().unwrap(),
    ];
    let randoms = random_scalars(200, &mut rng);
    let pairs = randoms
        .chunks(2)
        .map(|p| (p[0], p[1]))
        .chain(every_pair(&specials))
        .chain(specials.iter().map(|&a| (a, randoms[0])));
    for (a, b) in pairs {
        let got =
            reference::field_op(FieldOp::FrMul, &scalar_words(&a), &scalar_words(&b)).unwrap();
        assert_eq!(got, scalar_words(&(a * b)), "{a:?} * {b:?}");
    }
    for a in randoms.iter().chain(&specials) {
        let got = reference::field_op(FieldOp::FrSqr, &scalar_words(a), &scalar_words(a)).unwrap();
        assert_eq!(got, scalar_words(&a.square()), "{a:?} squared");
    }
}

#[test]
fn reference_scalars_leave_montgomery_form_and_unreduced_input_is_reduced() {
    let mut rng = seeded();
    let zero = vec![0u64; 4];
    for s in random_scalars(200, &mut rng)
        .iter()
        .chain(&[Scalar::ZERO, Scalar::ONE, -Scalar::ONE])
    {
        let got = reference::field_op(FieldOp::FrFromMontgomery, &scalar_words(s), &zero).unwrap();
        assert_eq!(got, canonical_words(s));
    }
    // Montgomery words x >= r stand for x mod r: x + r (no overflow: x < r < 2^255).
    let modulus = canonical_words(&(-Scalar::ONE));
    for s in random_scalars(50, &mut rng) {
        let mut words = scalar_words(&s);
        let mut carry = 0u128;
        for (i, (w, m)) in words.iter_mut().zip(&modulus).enumerate() {
            // r = (r - 1) + 1: the + 1 goes into the lowest limb.
            let sum = u128::from(*w) + u128::from(*m) + u128::from(i == 0) + carry;
            *w = sum as u64;
            carry = sum >> 64;
        }
        assert_eq!(carry, 0);
        let got = reference::field_op(FieldOp::FrFromMontgomery, &words, &zero).unwrap();
        assert_eq!(got, canonical_words(&s), "x + r reads as x");
    }
}

#[test]
fn reference_msm_g1_matches_blstrs() {
    let mut rng = seeded();
    for n in [0usize, 1, 2, 3, 31, 200] {
        let bases = random_bases::<G1Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = expected_g1(&bases, &scalars);
        // Below 4 bits the windows outnumber the result buffer: an error.
        assert!(reference::msm(&bases, &scalars, 3).is_err());
        for bits in [0, 4, 7, 13, 16] {
            assert_eq!(
                reference::msm(&bases, &scalars, bits).unwrap(),
                want,
                "n={n} c={bits}"
            );
        }
    }
    let bases = awkward_bases::<G1Affine>(64, &mut rng);
    for (name, scalars) in special_scalars(64, &mut rng) {
        let want = expected_g1(&bases, &scalars);
        for bits in [0, 5, 16] {
            assert_eq!(
                reference::msm(&bases, &scalars, bits).unwrap(),
                want,
                "{name} c={bits}"
            );
        }
    }
}

#[test]
fn reference_msm_g2_matches_blstrs() {
    let mut rng = seeded();
    for n in [0usize, 1, 3, 40] {
        let bases = random_bases::<G2Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = expected_g2(&bases, &scalars);
        for bits in [0, 6, 16] {
            assert_eq!(
                reference::msm(&bases, &scalars, bits).unwrap(),
                want,
                "n={n} c={bits}"
            );
        }
    }
    let bases = awkward_bases::<G2Affine>(32, &mut rng);
    for (name, scalars) in special_scalars(32, &mut rng) {
        assert_eq!(
            reference::msm(&bases, &scalars, 0).unwrap(),
            expected_g2(&bases, &scalars),
            "{name}"
        );
    }
}

#[test]
fn reference_batch_add_matches_blstrs() {
    let mut rng = seeded();
    for n in [0usize, 1, 63, 64, 65, 300, 2000] {
        let g1 = awkward_bases::<G1Affine>(n, &mut rng);
        let g2 = awkward_bases::<G2Affine>(n.min(70), &mut rng);
        for density in [0.0, 0.01, 0.5, 1.0] {
            let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(density)).collect();
            let words = with_stray_bits(pack_bits(&bits), n);
            assert_eq!(
                reference::batch_add(&g1, &words).unwrap(),
                expected_selected(&g1, &bits),
                "G1 n={n} p={density}"
            );
            let bits2 = &bits[..g2.len()];
            assert_eq!(
                reference::batch_add(&g2, &with_stray_bits(pack_bits(bits2), bits2.len())).unwrap(),
                expected_selected(&g2, bits2),
                "G2 n={n} p={density}"
            );
        }
    }
}

/// Sets the bits past the first `n` in the last word: they select nothing.
fn with_stray_bits(mut words: Vec<u64>, n: usize) -> Vec<u64> {
    if n % 64 != 0 {
        if let Some(last) = words.last_mut() {
            *last |= !0u64 << (n % 64);
        }
    }
    words
}

/// The draws of `gpu_batch_add_matches_blstrs` from `seed` (one device) up to
/// its case (n, density): the G1 bases and the bits that case uses.
fn batch_add_case(seed: u64, want_n: usize, want_density: f64) -> (Vec<G1Affine>, Vec<bool>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for n in [0usize, 1, 3, 1000, (1 << 16) + 7] {
        let g1 = awkward_bases::<G1Affine>(n, &mut rng);
        let _g2 = awkward_bases::<G2Affine>(n, &mut rng);
        for density in [0.0, 0.5, 1.0] {
            let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(density)).collect();
            if n == want_n && density == want_density {
                return (g1, bits);
            }
        }
    }
    unreachable!("no such case")
}

/// The H200 failure of `gpu_batch_add_matches_blstrs` (seed
/// 11642557286751185549, G1 n=1000 p=0.5) replayed on the host: the
/// reference sums each 64-point word, then the words in one group (16 <=
/// kReduceGroup), as the device does for n = 1000.
#[test]
fn reference_batch_add_replays_the_h200_failure_case() {
    let (bases, bits) = batch_add_case(11642557286751185549, 1000, 0.5);
    assert_eq!(bases.len(), 1000);
    let want = expected_selected(&bases, &bits);
    assert_eq!(
        reference::batch_add(&bases, &pack_bits(&bits)).unwrap(),
        want
    );
}

/// Selected bases per partial sum of the device's batch addition
/// (kSelectedPerThread in cuda/msm/pippenger.cuh).
const SELECTED_PER_PART: usize = 32;

/// Batch addition whose partial sums are the listed points: each list is
/// padded with selected identity bases to one part, and an unselected
/// filler base follows every part (unset bits between parts). The parts'
/// sums meet in full XYZZ additions, so each special case of that addition
/// is reached.
fn parts_case(parts: &[Vec<G1Affine>], filler: G1Affine) -> (Vec<G1Affine>, Vec<bool>) {
    let mut bases = Vec::new();
    let mut bits = Vec::new();
    for part in parts {
        assert!(part.len() <= SELECTED_PER_PART);
        for i in 0..SELECTED_PER_PART {
            bases.push(part.get(i).copied().unwrap_or(G1Affine::identity()));
            bits.push(true);
        }
        bases.push(filler);
        bits.push(false);
    }
    (bases, bits)
}

#[test]
fn reference_batch_add_special_cases_of_the_full_addition() {
    let mut rng = seeded();
    let r = random_bases::<G1Affine>(4, &mut rng);
    let (a, b, c, filler) = (r[0], r[1], r[2], r[3]);
    let o = G1Affine::identity();
    let cases: Vec<(&str, Vec<Vec<G1Affine>>)> = vec![
        ("P + P, same Z", vec![vec![a], vec![a]]),
        ("P + P, other Z", vec![vec![a, b], vec![b, a]]),
        ("P + -P", vec![vec![a, b], vec![-b, -a]]),
        ("P + -P, then more", vec![vec![a, b], vec![-a, -b], vec![c]]),
        ("O + P", vec![vec![], vec![a, b]]),
        ("P + O", vec![vec![a, b], vec![]]),
        ("O + O", vec![vec![], vec![]]),
        ("O + O, then P", vec![vec![], vec![], vec![a, c]]),
        ("identity bases", vec![vec![o, o], vec![o, a, o], vec![o]]),
        ("P + P + P", vec![vec![a, b], vec![b, a], vec![a, b]]),
        ("2P + 2P", vec![vec![a, a], vec![b, b], vec![a, b, a, b]]),
        (
            "in-part P + P, P + -P",
            vec![vec![a, a, b, -b, c], vec![-c]],
        ),
        ("in-part sum to O, then P", vec![vec![a, -a, b], vec![b]]),
        ("2P and -2P", vec![vec![a, a], vec![-a, -a], vec![c]]),
    ];
    for (name, parts) in cases {
        let (bases, bits) = parts_case(&parts, filler);
        let want = expected_selected(&bases, &bits);
        assert_eq!(
            reference::batch_add(&bases, &pack_bits(&bits)).unwrap(),
            want,
            "{name}"
        );
    }
    // More parts than a few groups of the row reduction (8 each): 40 equal
    // parts, summed over two levels.
    let parts: Vec<Vec<G1Affine>> = (0..40).map(|_| vec![a, b, o, -c]).collect();
    let (bases, bits) = parts_case(&parts, filler);
    assert_eq!(
        reference::batch_add(&bases, &pack_bits(&bits)).unwrap(),
        expected_selected(&bases, &bits),
        "40 equal parts"
    );
}

const GPU_SIZES: [usize; 8] = [0, 1, 2, 3, 31, 1000, (1 << 16) + 7, 1 << 20];

/// The sizes to run: all of GPU_SIZES, or those up to G16_GPU_MSM_MAX_POINTS
/// (compute-sanitizer's racecheck is too slow for 2^20 points).
fn gpu_sizes() -> impl Iterator<Item = usize> {
    let max = env_or("G16_GPU_MSM_MAX_POINTS", usize::MAX);
    GPU_SIZES.into_iter().filter(move |&n| n <= max)
}

#[test]
fn gpu_msm_g1_matches_blstrs() {
    on_each_device(|guard, rng| {
        for n in gpu_sizes() {
            let bases = random_bases::<G1Affine>(n, rng);
            let scalars = random_scalars(n, rng);
            let got = msm_g1(guard, &bases, &scalars).expect("msm_g1");
            assert_eq!(got, expected_g1(&bases, &scalars), "G1 n={n}");
        }
        let bases = awkward_bases::<G1Affine>(1000, rng);
        for (name, scalars) in special_scalars(1000, rng) {
            let got = msm_g1(guard, &bases, &scalars).expect("msm_g1");
            assert_eq!(got, expected_g1(&bases, &scalars), "G1 {name}");
        }
    });
}

#[test]
fn gpu_msm_g2_matches_blstrs() {
    on_each_device(|guard, rng| {
        for n in gpu_sizes() {
            let bases = random_bases::<G2Affine>(n, rng);
            let scalars = random_scalars(n, rng);
            let got = msm_g2(guard, &bases, &scalars).expect("msm_g2");
            assert_eq!(got, expected_g2(&bases, &scalars), "G2 n={n}");
        }
        let bases = awkward_bases::<G2Affine>(1000, rng);
        for (name, scalars) in special_scalars(1000, rng) {
            let got = msm_g2(guard, &bases, &scalars).expect("msm_g2");
            assert_eq!(got, expected_g2(&bases, &scalars), "G2 {name}");
        }
    });
}

#[test]
fn gpu_batch_add_matches_blstrs() {
    on_each_device(|guard, rng| {
        for n in [0usize, 1, 3, 1000, (1 << 16) + 7] {
            let g1 = awkward_bases::<G1Affine>(n, rng);
            let g2 = awkward_bases::<G2Affine>(n, rng);
            for density in [0.0, 0.5, 1.0] {
                let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(density)).collect();
                let words = with_stray_bits(pack_bits(&bits), n);
                let got1 = batch_add_g1(guard, &g1, &words).expect("batch_add_g1");
                assert_eq!(got1, expected_selected(&g1, &bits), "G1 n={n} p={density}");
                let got2 = batch_add_g2(guard, &g2, &words).expect("batch_add_g2");
                assert_eq!(got2, expected_selected(&g2, &bits), "G2 n={n} p={density}");
            }
        }
        // Sparse and nearly full bitmaps: one thread's run of selected bases
        // spans many words, or skips a single one.
        let g1 = awkward_bases::<G1Affine>((1 << 16) + 7, rng);
        for density in [0.003, 0.01, 0.99] {
            let bits: Vec<bool> = (0..g1.len()).map(|_| rng.gen_bool(density)).collect();
            let words = with_stray_bits(pack_bits(&bits), g1.len());
            let got = batch_add_g1(guard, &g1, &words).expect("batch_add_g1");
            assert_eq!(got, expected_selected(&g1, &bits), "G1 sparse p={density}");
        }
    });
}

/// Batch additions launched right after their bases' upload, many times:
/// the kernels must see the uploaded bases (the upload once returned before
/// its DMA landed, and a batch addition read stale device memory).
#[test]
fn gpu_batch_add_right_after_upload_sees_the_bases() {
    on_each_device(|guard, rng| {
        for n in [1000usize, 20_000] {
            for round in 0..24 {
                let bases = awkward_bases::<G1Affine>(n, rng);
                let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
                let got = batch_add_g1(guard, &bases, &pack_bits(&bits)).expect("batch_add_g1");
                assert_eq!(got, expected_selected(&bases, &bits), "n={n} round {round}");
            }
        }
    });
}

#[test]
fn gpu_resident_bases_serve_many_calls_and_prefixes() {
    on_each_device(|guard, rng| {
        let bases = random_bases::<G1Affine>(5000, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload");
        assert_eq!(
            (resident.len(), resident.ordinal()),
            (5000, guard.device().ordinal())
        );
        for n in [5000, 4097, 10, 0] {
            let scalars = random_scalars(n, rng);
            let got = resident.msm(guard, &scalars).expect("resident msm");
            assert_eq!(got, expected_g1(&bases[..n], &scalars), "prefix {n}");
        }
        assert!(resident.msm(guard, &random_scalars(5001, rng)).is_err());
        assert!(msm_g1(guard, &bases, &random_scalars(4999, rng)).is_err());
    });
}

/// An indexed MSM over a sparse subset of resident bases (what a witness of
/// mostly bits leaves to the bucket MSM): random subsets, repeated indices,
/// special scalars, the empty subset; an index past the bases is an error.
#[test]
fn gpu_indexed_msm_over_a_subset_of_resident_bases() {
    on_each_device(|guard, rng| {
        let bases = random_bases::<G1Affine>(20_000, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload");
        for (count, spread) in [(0usize, 20_000u32), (1, 20_000), (1000, 20_000), (5000, 7)] {
            let indices: Vec<u32> = (0..count).map(|_| rng.gen_range(0..spread)).collect();
            let scalars = random_scalars(count, rng);
            let got = resident
                .msm_indexed(guard, &scalars, &indices)
                .expect("indexed msm");
            let picked: Vec<G1Affine> = indices.iter().map(|&i| bases[i as usize]).collect();
            assert_eq!(got, expected_g1(&picked, &scalars), "{count} of {spread}");
        }
        let indices: Vec<u32> = (0..1000).map(|i| 19_999 - 3 * i).collect();
        let picked: Vec<G1Affine> = indices.iter().map(|&i| bases[i as usize]).collect();
        for (name, scalars) in special_scalars(1000, rng) {
            let got = resident.msm_indexed(guard, &scalars, &indices).unwrap();
            assert_eq!(got, expected_g1(&picked, &scalars), "indexed {name}");
        }
        let scalars = random_scalars(2, rng);
        let past_end = resident.msm_indexed(guard, &scalars, &[0, 20_000]);
        assert!(past_end.is_err(), "index past the bases accepted");
        assert!(resident.msm_indexed(guard, &scalars, &[0]).is_err());
        // The device still works after the refusals.
        let got = resident.msm_indexed(guard, &scalars, &[5, 5]).unwrap();
        assert_eq!(got, expected_g1(&[bases[5], bases[5]], &scalars));
        let g2 = random_bases::<G2Affine>(3000, rng);
        let resident_g2 = ResidentBases::upload(guard, &g2).expect("upload G2");
        let indices: Vec<u32> = (0..700).map(|_| rng.gen_range(0..3000)).collect();
        let scalars = random_scalars(700, rng);
        let picked: Vec<G2Affine> = indices.iter().map(|&i| g2[i as usize]).collect();
        let got = resident_g2.msm_indexed(guard, &scalars, &indices).unwrap();
        assert_eq!(got, expected_g2(&picked, &scalars), "G2 indexed");
    });
}

/// Host scalars staged through pinned slots land whole and in order
/// (slots smaller than the set, a partial last piece, zeros past it, slots
/// reused); MSMs of a range of the bases from staged, pinned and ordinary
/// memory (and the direct path) equal blstrs, also when two threads share
/// one base set's slots.
#[test]
fn gpu_staged_scalars_land_whole() {
    on_each_device(|guard, rng| {
        let values = random_scalars(4567, rng);
        let mut uploader = ScalarUploader::with_piece(guard, 1000).expect("upload slots");
        assert_eq!(uploader.ordinal(), guard.device().ordinal());
        for _ in 0..2 {
            let on_device = uploader.upload(guard, &values, 5000).expect("upload");
            let back = on_device.download(guard, 5000).unwrap();
            assert_eq!(&back[..4567], &values[..]);
            assert!(back[4567..].iter().all(|s| *s == Scalar::ZERO));
        }
        let none = uploader.upload(guard, &[], 3).unwrap();
        assert_eq!(none.download(guard, 3).unwrap(), vec![Scalar::ZERO; 3]);

        // At least the size from which ResidentBases stages its scalars.
        let n = (1 << 16) + 5;
        let bases = random_bases::<G1Affine>(n + 9, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload bases");
        let scalars = random_scalars(n, rng);
        let want = expected_g1(&bases[9..], &scalars);
        assert!(!is_pinned(&scalars));
        assert_eq!(
            resident.msm_range(guard, 9, &scalars).unwrap(),
            want,
            "staged"
        );
        assert_eq!(
            resident.msm_range_direct(guard, 9, &scalars).unwrap(),
            want,
            "copied by the driver"
        );
        assert!(resident.msm_range_direct(guard, 10, &scalars).is_err());
        let mut pinned = PinnedStaging::new(n).expect("pinned memory");
        pinned.as_mut_slice().copy_from_slice(&scalars);
        assert!(is_pinned(pinned.as_mut_slice()));
        assert_eq!(
            resident.msm_range(guard, 9, pinned.as_mut_slice()).unwrap(),
            want,
            "from pinned memory"
        );
        // Two threads on one base set: one stages, the other (slots busy)
        // may go the driver's way; both sums are right.
        let other = random_scalars(n, rng);
        let want_other = expected_g1(&bases[..n], &other);
        let ordinal = guard.device().ordinal();
        std::thread::scope(|scope| {
            let resident = &resident;
            let runs: Vec<_> = [(&scalars, 9, &want), (&other, 0, &want_other)]
                .into_iter()
                .map(|(scalars, first, want)| {
                    scope.spawn(move || {
                        let device = DeviceMutex::new(Device::open(ordinal).unwrap());
                        let guard = device.lock();
                        for _ in 0..3 {
                            let got = resident.msm_range(&guard, first, scalars).unwrap();
                            assert_eq!(&got, want, "thread from base {first}");
                        }
                    })
                })
                .collect();
            for run in runs {
                run.join().unwrap();
            }
        });

        let g2 = random_bases::<G2Affine>(n, rng);
        let resident_g2 = ResidentBases::upload(guard, &g2).expect("upload G2 bases");
        assert_eq!(
            resident_g2.msm(guard, &scalars).unwrap(),
            expected_g2(&g2, &scalars),
            "G2 staged"
        );
    });
}

/// Bases resident on one device refuse another device's guard, by the
/// staged path (large scalar sets) as by the driver's, and still serve
/// their own device afterwards.
#[test]
fn gpu_resident_bases_refuse_another_devices_guard() {
    let _memory = shared_device_memory();
    let Some(devices) = gpu::two_devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    let n = (1 << 16) + 1;
    let bases = random_bases::<G1Affine>(n, &mut rng);
    let scalars = random_scalars(n, &mut rng);
    let resident = ResidentBases::upload(&devices[0].lock(), &bases).expect("upload");
    let other = devices[1].lock();
    assert!(resident.msm(&other, &scalars).is_err(), "staged");
    assert!(
        resident.msm(&other, &scalars[..1000]).is_err(),
        "driver's path"
    );
    drop(other);
    assert_eq!(
        resident.msm(&devices[0].lock(), &scalars).unwrap(),
        expected_g1(&bases, &scalars)
    );
}

/// MSMs and batch additions over a range of the resident bases (what one
/// device's part of an MSM split over devices is): the parts of a split
/// add up to the whole, in G1 and G2; a range past the bases is an error.
#[test]
fn gpu_ranges_of_resident_bases_add_up_to_the_whole() {
    on_each_device(|guard, rng| {
        let n = 10_000 + 7;
        let bases = random_bases::<G1Affine>(n, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload");
        let scalars = random_scalars(n, rng);
        let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
        let words = pack_bits(&bits);
        for (first, end) in [
            (0, n),
            (64, 64),
            (0, 1),
            (4096, n),
            (128, 6400),
            (n / 64 * 64, n),
        ] {
            let got = resident
                .msm_range(guard, first, &scalars[first..end])
                .expect("range msm");
            let want = expected_g1(&bases[first..end], &scalars[first..end]);
            assert_eq!(got, want, "msm over {first}..{end}");
            // Bits past the range in its last word belong to the next range.
            let got = resident
                .batch_add_range(guard, first, &words[first / 64..], end - first)
                .expect("range batch add");
            let want = expected_selected(&bases[first..end], &bits[first..end]);
            assert_eq!(got, want, "batch addition over {first}..{end}");
        }
        let whole = expected_g1(&bases, &scalars);
        let parts = [(0, 3008), (3008, 6400), (6400, n)].map(|(first, end)| {
            resident
                .msm_range(guard, first, &scalars[first..end])
                .unwrap()
        });
        assert_eq!(parts.into_iter().sum::<G1Projective>(), whole);
        assert!(resident.msm_range(guard, n - 3, &scalars[..4]).is_err());
        assert!(resident.batch_add_range(guard, n, &words, 1).is_err());
        assert!(resident
            .msm_range(guard, usize::MAX, &scalars[..1])
            .is_err());

        let g2 = random_bases::<G2Affine>(3000, rng);
        let resident_g2 = ResidentBases::upload(guard, &g2).expect("upload G2");
        let scalars = random_scalars(3000, rng);
        let got = resident_g2
            .msm_range(guard, 1024, &scalars[1024..2500])
            .unwrap();
        assert_eq!(got, expected_g2(&g2[1024..2500], &scalars[1024..2500]));
        let got = resident_g2
            .batch_add_range(guard, 1024, &words[16..], 1976)
            .unwrap();
        assert_eq!(got, expected_selected(&g2[1024..], &bits[1024..3000]));
    });
}

/// 2^16 + 7 random G1 and G2 bases, on the host and resident.
struct KnobCase {
    g1: Vec<G1Affine>,
    g2: Vec<G2Affine>,
    resident: ResidentBases<G1Affine>,
    resident_g2: ResidentBases<G2Affine>,
}

/// Runs `check` on each device with a KnobCase, holding the device memory
/// exclusively: a knob holds for every MSM in the process while it is set.
fn on_each_device_with_knobs(check: impl Fn(&DeviceGuard<'_>, &KnobCase, &mut ChaCha20Rng)) {
    let _memory = exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    let n = (1 << 16) + 7;
    let g1 = random_bases::<G1Affine>(n, &mut rng);
    let g2 = random_bases::<G2Affine>(n, &mut rng);
    for device in &devices {
        let guard = device.lock();
        let case = KnobCase {
            resident: ResidentBases::upload(&guard, &g1).expect("upload G1"),
            resident_g2: ResidentBases::upload(&guard, &g2).expect("upload G2"),
            g1: g1.clone(),
            g2: g2.clone(),
        };
        check(&guard, &case, &mut rng);
    }
}

/// MSMs split into chunks (how sets larger than free memory, or of 2^27
/// points, run): chunks that do not divide the points, a one-point last
/// chunk, ranges, indexed subsets and special scalars, G1 and G2.
#[test]
fn gpu_msm_in_many_chunks_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        let KnobCase {
            g1,
            g2,
            resident,
            resident_g2,
        } = case;
        let n = g1.len();
        let scalars = random_scalars(n, rng);
        let want = expected_g1(g1, &scalars);
        let want_g2 = expected_g2(g2, &scalars);
        // 4096 splits n into 17 chunks, the last of 7 points; n - 1 leaves
        // a last chunk of one point.
        for cap in [4096, 10_000, n - 1] {
            let _cap = Knob::chunk_cap(cap);
            assert_eq!(msm_g1(guard, g1, &scalars).unwrap(), want, "G1, cap {cap}");
            assert_eq!(
                resident.msm(guard, &scalars).unwrap(),
                want,
                "staged G1, cap {cap}"
            );
            assert_eq!(
                resident_g2.msm(guard, &scalars).unwrap(),
                want_g2,
                "G2, cap {cap}"
            );
            assert_eq!(
                resident
                    .msm_range_direct(guard, 100, &scalars[100..])
                    .unwrap(),
                expected_g1(&g1[100..], &scalars[100..]),
                "G1 range, cap {cap}"
            );
        }
        let _cap = Knob::chunk_cap(1000);
        for (name, special) in special_scalars(5000, rng) {
            assert_eq!(
                resident.msm(guard, &special).unwrap(),
                expected_g1(&g1[..5000], &special),
                "chunked {name}"
            );
        }
        check_indexed(guard, resident, g1, 6000, rng, "chunked indexed");
    });
}

/// An MSM over `count` random picks (repeats likely) of the resident bases.
fn check_indexed(
    guard: &DeviceGuard<'_>,
    resident: &ResidentBases<G1Affine>,
    g1: &[G1Affine],
    count: usize,
    rng: &mut ChaCha20Rng,
    what: &str,
) {
    let indices: Vec<u32> = (0..count)
        .map(|_| rng.gen_range(0..g1.len() as u32))
        .collect();
    let picked: Vec<G1Affine> = indices.iter().map(|&i| g1[i as usize]).collect();
    let chosen = random_scalars(count, rng);
    assert_eq!(
        resident.msm_indexed(guard, &chosen, &indices).unwrap(),
        expected_g1(&picked, &chosen),
        "{what}"
    );
}

/// G2's first level in the layouts other than the default (pairs of
/// threads held to 128 registers, which every other G2 test runs), and so
/// its task levels and window reduction whole and over pairs: random,
/// special and awkward inputs (identity, repeated and negated bases),
/// blocks of 32 and 512, several chunks.
#[test]
fn gpu_msm_g2_in_every_first_level_layout_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        for layout in [G2FirstLevel::WholePoints, G2FirstLevel::Pairs] {
            let _layout = Knob::g2_first_level(layout);
            check_g2_first_level(guard, case, rng, &format!("{layout:?}"));
        }
    });
}

/// One layout's G2 checks for gpu_msm_g2_in_every_first_level_layout.
fn check_g2_first_level(
    guard: &DeviceGuard<'_>,
    case: &KnobCase,
    rng: &mut ChaCha20Rng,
    layout: &str,
) {
    let n = case.g2.len();
    let mut cases = special_scalars(n, rng);
    cases.push(("random", random_scalars(n, rng)));
    for (name, scalars) in &cases {
        assert_eq!(
            case.resident_g2.msm(guard, scalars).unwrap(),
            expected_g2(&case.g2, scalars),
            "{layout}, {name}"
        );
    }
    let (_, scalars) = &cases[cases.len() - 1];
    let want = expected_g2(&case.g2, scalars);
    for threads in [10_000, 100] {
        let _threads = Knob::first_level_threads(threads);
        let got = case.resident_g2.msm(guard, scalars).unwrap();
        assert_eq!(got, want, "{layout}, {threads} threads");
    }
    {
        let _cap = Knob::chunk_cap(10_000);
        assert_eq!(
            case.resident_g2.msm(guard, scalars).unwrap(),
            want,
            "{layout}, chunks"
        );
    }
    let awkward = awkward_bases::<G2Affine>(4099, rng);
    let resident = ResidentBases::upload(guard, &awkward).unwrap();
    let scalars = random_scalars(awkward.len(), rng);
    assert_eq!(
        resident.msm(guard, &scalars).unwrap(),
        expected_g2(&awkward, &scalars),
        "{layout}, awkward bases"
    );
}

/// Blocks of sorted entries from 32 up to 512 a thread (what 2^24-point
/// MSMs run), at sizes a test can check: G1 and G2, special scalars (one
/// bucket spanning many blocks among them) and an indexed subset with
/// repeats.
#[test]
fn gpu_msm_in_long_first_level_blocks_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        let n = case.g1.len();
        let scalars = random_scalars(n, rng);
        let want_g2 = expected_g2(&case.g2, &scalars);
        // n points in 13-bit windows (20 of them) make 1.31 M entries: a
        // threshold of 40,000 threads keeps blocks of 32, 10,000 gives 128
        // and 100 the longest, 512.
        for threads in [40_000, 10_000, 100] {
            let _threads = Knob::first_level_threads(threads);
            assert_eq!(
                case.resident_g2.msm(guard, &scalars).unwrap(),
                want_g2,
                "G2, {threads} threads"
            );
            for (name, special) in special_scalars(n, rng) {
                assert_eq!(
                    case.resident.msm(guard, &special).unwrap(),
                    expected_g1(&case.g1, &special),
                    "{name}, {threads} threads"
                );
            }
            let what = format!("indexed, {threads} threads");
            check_indexed(guard, &case.resident, &case.g1, n, rng, &what);
        }
    });
}

#[test]
fn gpu_request_too_large_for_memory_is_an_error_and_device_stays_usable() {
    let _memory = exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    for device in &devices {
        let guard = device.lock();
        let n = 1 << 16;
        let bases = random_bases::<G1Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = expected_g1(&bases, &scalars);
        let resident = ResidentBases::upload(&guard, &bases).expect("upload");
        // A reservation of all memory is itself refused, cleanly.
        let total = guard.device().total_memory();
        assert!(reserve_device_memory(&guard, total * 2).is_err());
        // Leave the device 4 MiB: bases (6 MiB) cannot be uploaded again and
        // the MSM either fits in small chunks or is refused, never crashes.
        let free = guard.device().free_memory().expect("free memory");
        let hog = reserve_device_memory(&guard, free - (4 << 20)).expect("reserve");
        println!("holding {} of {} bytes", hog.bytes(), total);
        let upload = ResidentBases::upload(&guard, &bases);
        assert!(
            matches!(&upload, Err(e) if e.is_out_of_memory()),
            "{:?}",
            upload.as_ref().err()
        );
        match resident.msm(&guard, &scalars) {
            Ok(got) => assert_eq!(got, want, "chunked MSM under memory pressure"),
            Err(error) => {
                println!("refused under pressure: {error}");
                assert!(error.is_out_of_memory(), "{error}");
            }
        }
        drop(hog);
        assert_eq!(
            resident.msm(&guard, &scalars).expect("msm after release"),
            want
        );
        assert_eq!(
            msm_g1(&guard, &bases, &scalars).expect("msm_g1 after release"),
            want
        );
    }
}

/// Needs no device: the bounds are checked before anything is set, so the
/// other tests' MSMs keep choosing their own windows.
#[test]
fn forced_window_bits_outside_their_range_are_refused() {
    for bits in [1, 3, 21, 64] {
        assert!(
            set_msm_window_bits_for_tests(Some(bits)).is_err(),
            "{bits} bits"
        );
    }
    set_msm_window_bits_for_tests(None).unwrap();
}

#[test]
fn generic_curve_constants_match_blstrs_sizes() {
    assert_eq!(std::mem::size_of::<G1Affine>(), G1Affine::AFFINE_WORDS * 8);
    assert_eq!(std::mem::size_of::<G2Affine>(), G2Affine::AFFINE_WORDS * 8);
    assert_eq!(
        std::mem::size_of::<G1Projective>(),
        G1Affine::JACOBIAN_WORDS * 8
    );
    assert_eq!(
        std::mem::size_of::<G2Projective>(),
        G2Affine::JACOBIAN_WORDS * 8
    );
}
