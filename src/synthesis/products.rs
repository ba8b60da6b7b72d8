//! Field products of synthesis with short cuts for witness values 0 and 1:
//! most of a circuit's witness is bits, and most coefficients that are not
//! one multiply them.
//!
//! The comparisons are plain word comparisons: witness values are not secret
//! from the prover, and the constant-time `==` costs more than the product it
//! saves.

use blstrs::Scalar;
use ff::Field;

/// `acc += value · coefficient`.
pub(super) fn add_product(acc: &mut Scalar, value: &Scalar, coefficient: &Scalar) {
    let value_words = montgomery_words(value);
    if value_words == ZERO_WORDS {
        return;
    }
    if value_words == montgomery_words(&Scalar::ONE) {
        *acc += coefficient;
    } else if montgomery_words(coefficient) == montgomery_words(&Scalar::ONE) {
        *acc += value;
    } else {
        *acc += *value * coefficient;
    }
}

/// Whether `a · b = c`.
pub(super) fn product_equals(a: &Scalar, b: &Scalar, c: &Scalar) -> bool {
    let a_words = montgomery_words(a);
    if a_words == ZERO_WORDS {
        montgomery_words(c) == ZERO_WORDS
    } else if a_words == montgomery_words(&Scalar::ONE) {
        montgomery_words(b) == montgomery_words(c)
    } else {
        montgomery_words(&(*a * b)) == montgomery_words(c)
    }
}

/// Whether `value` is zero.
pub(super) fn is_zero(value: &Scalar) -> bool {
    montgomery_words(value) == ZERO_WORDS
}

const ZERO_WORDS: [u64; 4] = [0; 4];

fn montgomery_words(value: &Scalar) -> [u64; 4] {
    blst::blst_fr::from(*value).l
}
