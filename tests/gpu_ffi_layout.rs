//! The structs of `src/ffi_types.rs` (bindgen's output for
//! `include/groth16_gpu/ffi_types.h`) have blstrs' memory layout: same sizes,
//! and blstrs values read through them give back the same field elements.

#[path = "../src/ffi_types.rs"]
#[rustfmt::skip]
#[allow(dead_code)]
mod ffi_types;

use std::mem::{align_of, size_of};

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar};
use ff::Field;
use ffi_types::{g16_fp, g16_fp2, g16_fr, g16_g1_affine, g16_g2_affine};
use group::prime::PrimeCurveAffine;

/// Reads a blstrs value's bytes as the bindgen struct of the same size.
fn reinterpret<From: Copy, To: Copy>(value: &From) -> To {
    assert_eq!(size_of::<From>(), size_of::<To>());
    // SAFETY: same size (checked above); `To` is plain integers, valid for any
    // bytes; read_unaligned needs no alignment.
    unsafe { std::ptr::read_unaligned((value as *const From).cast::<To>()) }
}

/// Montgomery limbs as blst holds them: u64 pairs of our u32 limbs, low half first.
fn fp_from_limbs(fp: &g16_fp) -> Fp {
    let mut words = [0u64; 6];
    for (word, pair) in words.iter_mut().zip(fp.limbs.chunks_exact(2)) {
        *word = u64::from(pair[0]) | (u64::from(pair[1]) << 32);
    }
    Fp::from_raw_unchecked(words)
}

fn fp2_from_limbs(fp2: &g16_fp2) -> Fp2 {
    Fp2::new(fp_from_limbs(&fp2.c0), fp_from_limbs(&fp2.c1))
}

#[test]
fn sizes_match_blstrs_and_alignment_divides_it() {
    assert_eq!(size_of::<g16_fp>(), size_of::<Fp>());
    assert_eq!(size_of::<g16_fp2>(), size_of::<Fp2>());
    assert_eq!(size_of::<g16_fr>(), size_of::<Scalar>());
    assert_eq!(size_of::<g16_g1_affine>(), size_of::<G1Affine>());
    assert_eq!(size_of::<g16_g2_affine>(), size_of::<G2Affine>());
    assert_eq!(size_of::<g16_fp>(), ffi_types::G16_FP_LIMBS as usize * 4);
    assert_eq!(size_of::<g16_fr>(), ffi_types::G16_FR_LIMBS as usize * 4);
    // A blstrs slice can be viewed as a slice of ours, not always the reverse.
    assert_eq!(align_of::<G1Affine>() % align_of::<g16_g1_affine>(), 0);
    assert_eq!(align_of::<G2Affine>() % align_of::<g16_g2_affine>(), 0);
    assert_eq!(align_of::<Scalar>() % align_of::<g16_fr>(), 0);
}

#[test]
fn g1_affine_bytes_are_x_then_y_in_montgomery_limbs() {
    let point = G1Affine::generator();
    let ours: g16_g1_affine = reinterpret(&point);
    assert_eq!(fp_from_limbs(&ours.x), point.x());
    assert_eq!(fp_from_limbs(&ours.y), point.y());
}

#[test]
fn g2_affine_bytes_are_x_then_y_each_c0_then_c1() {
    let point = G2Affine::generator();
    let ours: g16_g2_affine = reinterpret(&point);
    assert_eq!(fp2_from_limbs(&ours.x), point.x());
    assert_eq!(fp2_from_limbs(&ours.y), point.y());
}

#[test]
fn scalar_bytes_are_montgomery_limbs_least_significant_first() {
    // One in Montgomery form is R = 2^256 mod r.
    let ours: g16_fr = reinterpret(&Scalar::ONE);
    let montgomery_r = Scalar::from(2u64).pow_vartime([256u64]).to_bytes_le();
    let limb_bytes: Vec<u8> = ours
        .limbs
        .iter()
        .flat_map(|limb| limb.to_le_bytes())
        .collect();
    assert_eq!(limb_bytes, montgomery_r);
}

#[test]
fn status_codes_are_distinct_and_ok_is_zero() {
    use ffi_types::g16_status;
    assert_eq!(g16_status::G16_OK, 0);
    let codes = [
        g16_status::G16_OK,
        g16_status::G16_ERR_CUDA,
        g16_status::G16_ERR_INVALID_ARGUMENT,
        g16_status::G16_ERR_OUT_OF_MEMORY,
    ];
    let distinct: std::collections::BTreeSet<_> = codes.iter().collect();
    assert_eq!(distinct.len(), codes.len());
}
