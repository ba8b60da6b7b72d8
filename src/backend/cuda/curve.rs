//! The two groups as the GPU code sees them: word layouts and the way back
//! from its Jacobian output to blstrs points.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::{prime::PrimeCurveAffine, Group};

mod sealed {
    pub trait Sealed {}
    impl Sealed for blstrs::G1Affine {}
    impl Sealed for blstrs::G2Affine {}
}

/// G1 or G2 affine points, as the CUDA backend takes them.
pub trait GpuCurve: PrimeCurveAffine + sealed::Sealed + Send + Sync
where
    Self::Curve: Send + Sync,
{
    /// Whether this is G2 (the C++ side's switch).
    const IS_G2: bool;
    /// u64 words of one affine point (blst_p1_affine / blst_p2_affine).
    const AFFINE_WORDS: usize;
    /// u64 words of one Jacobian point (blst_p1 / blst_p2).
    const JACOBIAN_WORDS: usize;

    /// The blst Jacobian point held in `words` (JACOBIAN_WORDS of them).
    fn from_jacobian_words(words: &[u64]) -> Self::Curve;
}

/// The first `N` words as an array (the caller passes exactly N).
fn words_array<const N: usize>(words: &[u64]) -> [u64; N] {
    words[..N].try_into().expect("a Jacobian point's words")
}

impl GpuCurve for G1Affine {
    const IS_G2: bool = false;
    const AFFINE_WORDS: usize = 12;
    const JACOBIAN_WORDS: usize = 18;

    fn from_jacobian_words(words: &[u64]) -> G1Projective {
        // SAFETY: G1Projective is repr(transparent) over blst_p1, which is
        // three blst_fp of 6 u64 each: 18 words, any bit pattern a valid
        // value (transmute checks the size at compile time).
        unsafe { std::mem::transmute::<[u64; 18], G1Projective>(words_array(words)) }
    }
}

impl GpuCurve for G2Affine {
    const IS_G2: bool = true;
    const AFFINE_WORDS: usize = 24;
    const JACOBIAN_WORDS: usize = 36;

    fn from_jacobian_words(words: &[u64]) -> G2Projective {
        // SAFETY: G2Projective is repr(transparent) over blst_p2: three
        // blst_fp2 of 12 u64 each, 36 words, any bit pattern a valid value.
        unsafe { std::mem::transmute::<[u64; 36], G2Projective>(words_array(words)) }
    }
}

/// The most windows an MSM result has (C++ `kMaxMsmWindows`).
pub(crate) const MAX_WINDOWS: usize = 64;

/// Σ_w 2^(c w) · window_w over the Jacobian windows in `words`.
pub(crate) fn combine_windows<G: GpuCurve>(words: &[u64], window_bits: u32) -> G::Curve
where
    G::Curve: Send + Sync,
{
    let windows = 256_usize.div_ceil(window_bits as usize);
    let mut acc = G::Curve::identity();
    for w in (0..windows).rev() {
        for _ in 0..window_bits {
            acc = acc.double();
        }
        let start = w * G::JACOBIAN_WORDS;
        acc += G::from_jacobian_words(&words[start..start + G::JACOBIAN_WORDS]);
    }
    acc
}

/// Words viewed from a slice of blstrs values.
pub(crate) fn as_words<T>(values: &[T]) -> *const u64 {
    values.as_ptr().cast::<u64>()
}
