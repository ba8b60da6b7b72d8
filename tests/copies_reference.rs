//! Shifted copies of resident bases on the CPU, against blstrs: the field
//! inverses the copies' kernels use, the copies' window planning, and the
//! MSM through copies in the reference model of the GPU's code
//! (`backend::cuda::reference`). No device needed; `gpu_copies.rs` runs the
//! same sums on the device.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{Fp, Fp2, G1Affine, G2Affine};
use ff::Field;
use groth16_gpu::backend::cuda::reference::{self, FieldOp};
use groth16_gpu::backend::cuda::ResidentBases;
use msm_inputs::{
    awkward_bases, expected_g1, expected_g2, fp2_words, fp_words, ones_in_every_window,
    random_bases, random_scalars, seeded, special_scalars,
};

#[test]
fn reference_field_inverses_match_blstrs() {
    let mut rng = seeded();
    let half = Fp::from(2u64).invert().unwrap();
    let edges = [Fp::ONE, -Fp::ONE, half, -half, Fp::from(u64::MAX)];
    let values: Vec<Fp> = edges
        .into_iter()
        .chain((0..100).map(|_| Fp::random(&mut rng)))
        .collect();
    for a in &values {
        let w = fp_words(a);
        let got = reference::field_op(FieldOp::FpInverse, &w, &w).unwrap();
        assert_eq!(got, fp_words(&a.invert().unwrap()), "{a:?}");
    }
    let zero = fp_words(&Fp::ZERO);
    assert_eq!(
        reference::field_op(FieldOp::FpInverse, &zero, &zero).unwrap(),
        zero
    );
    let pairs = values.iter().zip(values.iter().rev());
    for x in pairs.map(|(&a, &b)| Fp2::new(a, b)).chain([
        Fp2::ONE,
        Fp2::new(Fp::ZERO, Fp::ONE),
        Fp2::new(Fp::ONE, Fp::ZERO),
    ]) {
        let w = fp2_words(&x);
        let got = reference::field_op(FieldOp::Fp2Inverse, &w, &w).unwrap();
        assert_eq!(got, fp2_words(&x.invert().unwrap()), "{x:?}");
    }
    let zero2 = fp2_words(&Fp2::ZERO);
    assert_eq!(
        reference::field_op(FieldOp::Fp2Inverse, &zero2, &zero2).unwrap(),
        zero2
    );
}

/// The copies' window bits and count as the key's planning reads them
/// (host functions: no device needed).
#[test]
fn copy_windows_follow_the_named_or_chosen_bits() {
    type G1Bases = ResidentBases<G1Affine>;
    for (len, bits, want_bits, want_windows) in [
        (1usize << 24, None, 20, 13),
        ((1 << 20) - 2, None, 16, 16),
        (1 << 24, Some(22), 22, 12),
        (1 << 18, Some(4), 4, 64),
    ] {
        assert_eq!(G1Bases::window_copy_bits(len, bits).unwrap(), want_bits);
        assert_eq!(G1Bases::window_copies(len, bits).unwrap(), want_windows);
    }
    for bad in [3, 25] {
        assert!(G1Bases::window_copy_bits(1 << 20, Some(bad)).is_err());
    }
}

#[test]
fn reference_msm_through_copies_matches_blstrs() {
    let mut rng = seeded();
    for n in [0usize, 1, 2, 3, 31, 200] {
        let bases = random_bases::<G1Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = expected_g1(&bases, &scalars);
        for bits in [4, 7, 8, 13, 16] {
            assert_eq!(
                reference::msm_through_copies(&bases, &scalars, bits).unwrap(),
                want,
                "n={n} copies for c={bits}"
            );
        }
    }
    let bases = awkward_bases::<G1Affine>(64, &mut rng);
    for (name, scalars) in special_scalars(64, &mut rng) {
        let want = expected_g1(&bases, &scalars);
        for bits in [5, 8] {
            assert_eq!(
                reference::msm_through_copies(&bases, &scalars, bits).unwrap(),
                want,
                "{name} c={bits}"
            );
        }
    }
    for bits in [4, 8] {
        let scalars = vec![ones_in_every_window(bits); 200];
        let bases = random_bases::<G1Affine>(200, &mut rng);
        assert_eq!(
            reference::msm_through_copies(&bases, &scalars, bits).unwrap(),
            expected_g1(&bases, &scalars),
            "one digit in every window, c={bits}"
        );
    }
    let scalars = random_scalars(3, &mut rng);
    let bases = random_bases::<G1Affine>(3, &mut rng);
    for bits in [0, 3, 25] {
        assert!(reference::msm_through_copies(&bases, &scalars, bits).is_err());
    }
}

#[test]
fn reference_msm_through_fewer_copies_matches_blstrs() {
    let mut rng = seeded();
    // Fewer copies than windows: window w adds into set w / copies, so the
    // sums come back in ceil(windows / copies) sets; the last may be short.
    for n in [0usize, 1, 3, 200] {
        let bases = random_bases::<G1Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = expected_g1(&bases, &scalars);
        for (bits, copies) in [(4, 2), (4, 63), (8, 3), (13, 7), (16, 5), (16, 15)] {
            assert_eq!(
                reference::msm_through_some_copies(&bases, &scalars, bits, copies).unwrap(),
                want,
                "n={n} {copies} copies for c={bits}"
            );
        }
    }
    let bases = awkward_bases::<G1Affine>(64, &mut rng);
    for (name, scalars) in special_scalars(64, &mut rng) {
        assert_eq!(
            reference::msm_through_some_copies(&bases, &scalars, 8, 3).unwrap(),
            expected_g1(&bases, &scalars),
            "{name}"
        );
    }
    let heavy = vec![ones_in_every_window(4); 100];
    let bases = random_bases::<G1Affine>(100, &mut rng);
    assert_eq!(
        reference::msm_through_some_copies(&bases, &heavy, 4, 5).unwrap(),
        expected_g1(&bases, &heavy),
        "one digit in every window"
    );
    let g2_bases = awkward_bases::<G2Affine>(40, &mut rng);
    let g2_scalars = random_scalars(40, &mut rng);
    assert_eq!(
        reference::msm_through_some_copies(&g2_bases, &g2_scalars, 9, 4).unwrap(),
        expected_g2(&g2_bases, &g2_scalars)
    );
    // One copy is no copy, and more copies than windows are refused.
    for copies in [1, 33] {
        assert!(reference::msm_through_some_copies(&bases, &heavy, 8, copies).is_err());
    }
}

#[test]
fn reference_msm_g2_through_copies_matches_blstrs() {
    let mut rng = seeded();
    for n in [0usize, 3, 40] {
        let bases = random_bases::<G2Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        for bits in [5, 9] {
            assert_eq!(
                reference::msm_through_copies(&bases, &scalars, bits).unwrap(),
                expected_g2(&bases, &scalars),
                "n={n} c={bits}"
            );
        }
    }
    let bases = awkward_bases::<G2Affine>(32, &mut rng);
    for (name, scalars) in special_scalars(32, &mut rng) {
        assert_eq!(
            reference::msm_through_copies(&bases, &scalars, 7).unwrap(),
            expected_g2(&bases, &scalars),
            "{name}"
        );
    }
}
