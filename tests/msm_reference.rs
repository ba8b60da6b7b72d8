//! The CUDA backend's MSM arithmetic and bucket logic run on the CPU
//! against blstrs (no GPU needed), and the bounds its knobs check before
//! anything is set. Inputs are fresh random values each run; the seed is
//! printed so a failure can be replayed. The same code on the device:
//! tests/gpu_msm.rs.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use groth16_gpu::backend::cuda::reference::{self, FieldOp};
use groth16_gpu::backend::cuda::{pack_bits, GpuCurve, MsmTuning};
use group::prime::PrimeCurveAffine;
use msm_inputs::{
    awkward_bases, expected_g1, expected_g2, expected_selected, fp2_words, fp_words, random_bases,
    random_scalars, seeded, special_scalars, with_stray_bits,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

#[test]
fn reference_field_ops_match_blstrs() {
    let mut rng = seeded();
    for _ in 0..200 {
        let (a, b) = (Fp::random(&mut rng), Fp::random(&mut rng));
        check_fp_products_and_sums(a, b);
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
        check_fp_products_and_sums(a, b);
    }
}

/// a·b, a + b and a - b by the reference against blstrs.
fn check_fp_products_and_sums(a: Fp, b: Fp) {
    let (wa, wb) = (fp_words(&a), fp_words(&b));
    for (op, want) in [
        (FieldOp::FpMul, a * b),
        (FieldOp::FpAdd, a + b),
        (FieldOp::FpSub, a - b),
    ] {
        assert_eq!(
            reference::field_op(op, &wa, &wb).unwrap(),
            fp_words(&want),
            "{op:?} of {a:?} and {b:?}"
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

/// Needs no device: a tuning's bounds are checked on the host.
#[test]
fn forced_window_bits_outside_their_range_are_refused() {
    let forced = |bits| MsmTuning {
        window_bits: Some(bits),
        ..MsmTuning::default()
    };
    for bits in [0, 1, 3, 23, 64] {
        assert!(forced(bits).check().is_err(), "{bits} bits");
    }
    for bits in [4, 13, 20, 22] {
        forced(bits).check().unwrap();
    }
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
