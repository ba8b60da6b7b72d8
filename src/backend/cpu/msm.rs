use std::borrow::Cow;

use blst::{blst_p1_affine, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Group};
use rayon::prelude::*;

use crate::synthesis::Density;
use crate::Error;

/// Below this many general scalars a plain sum of products beats Pippenger's setup.
const SMALL_MSM: usize = 8;

/// An affine group whose MSM blst's parallel Pippenger computes.
pub trait MsmAffine: PrimeCurveAffine<Scalar = Scalar> + Send + Sync
where
    Self::Curve: Send + Sync,
{
    /// blst's MSM over these affine bases, with 32 little-endian bytes per
    /// scalar. (blstrs' `multi_exp` takes projective bases, which blst
    /// turns back into affine ones, and converts the scalars serially.)
    fn pippenger(bases: &[Self], scalar_bytes: &[u8]) -> Self::Curve;
}

// The casts below rely on blstrs' points being #[repr(transparent)] over
// blst's: check what can be checked at compile time.
const _: () = assert!(std::mem::size_of::<G1Affine>() == std::mem::size_of::<blst_p1_affine>());
const _: () = assert!(std::mem::align_of::<G1Affine>() == std::mem::align_of::<blst_p1_affine>());
const _: () = assert!(std::mem::size_of::<G2Affine>() == std::mem::size_of::<blst_p2_affine>());
const _: () = assert!(std::mem::align_of::<G2Affine>() == std::mem::align_of::<blst_p2_affine>());

impl MsmAffine for G1Affine {
    fn pippenger(bases: &[G1Affine], scalar_bytes: &[u8]) -> G1Projective {
        // SAFETY: blstrs 0.7 declares G1Affine #[repr(transparent)] over
        // blst_p1_affine, so the slice has the same layout and length.
        let raw = unsafe {
            std::slice::from_raw_parts(bases.as_ptr().cast::<blst_p1_affine>(), bases.len())
        };
        let mut sum = G1Projective::identity();
        *sum.as_mut() = raw.mult(scalar_bytes, 255);
        sum
    }
}

impl MsmAffine for G2Affine {
    fn pippenger(bases: &[G2Affine], scalar_bytes: &[u8]) -> G2Projective {
        // SAFETY: as for G1: G2Affine is #[repr(transparent)] over
        // blst_p2_affine.
        let raw = unsafe {
            std::slice::from_raw_parts(bases.as_ptr().cast::<blst_p2_affine>(), bases.len())
        };
        let mut sum = G2Projective::identity();
        *sum.as_mut() = raw.mult(scalar_bytes, 255);
        sum
    }
}

/// What a scalar costs an MSM: nothing, an addition, or a multiplication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScalarClass {
    Zero,
    One,
    General,
}

/// `value`'s class, read from its words as blst holds them (Montgomery
/// form, always fully reduced: blstrs's own `==` compares these words).
/// Scalar's `is_zero` is constant-time (four `ct_eq` and an optimization
/// barrier), and with it a value's test cost ~6 times as much (8.5
/// against 1.5 ns on one core here), where the provers test every witness
/// value; the branches on the class that follow reveal it anyway.
pub(crate) fn class_of(value: &Scalar) -> ScalarClass {
    let words = blst::blst_fr::from(*value).l;
    if words == blst::blst_fr::from(Scalar::ONE).l {
        ScalarClass::One
    } else if words == [0; 4] {
        ScalarClass::Zero
    } else {
        ScalarClass::General
    }
}

/// Neither 0 nor 1: a scalar that needs a multiplication, not a skip or an
/// addition. The GPU prover splits its scalars by the same rule.
pub(crate) fn is_general(value: &Scalar) -> bool {
    class_of(value) == ScalarClass::General
}

/// The scalars as blst reads them: 32 little-endian bytes each.
fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut bytes = vec![0u8; scalars.len() * 32];
    bytes
        .par_chunks_mut(32 * 1024)
        .zip(scalars.par_chunks(1024))
        .for_each(|(out, chunk)| {
            for (to, value) in out.chunks_mut(32).zip(chunk) {
                to.copy_from_slice(&value.to_bytes_le());
            }
        });
    bytes
}

/// Σ `scalars[i]`·`bases[i]`.
///
/// Scalars 0 and 1, which dominate real witnesses, skip the multiplication:
/// zeros drop out and ones become plain additions; the rest go to blst.
pub fn msm<P: MsmAffine>(bases: &[P], scalars: &[Scalar]) -> Result<P::Curve, Error>
where
    P::Curve: Send + Sync,
{
    if bases.len() != scalars.len() {
        return Err(Error::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    let ones = (0..scalars.len())
        .into_par_iter()
        .with_min_len(1 << 10)
        .filter(|&i| class_of(&scalars[i]) == ScalarClass::One)
        .fold(P::Curve::identity, |acc, i| acc + bases[i])
        .reduce(P::Curve::identity, |x, y| x + y);
    // A witness of field elements needs no gather: blst reads the key's
    // bases where they lie.
    let (general_bases, general_scalars): (Cow<[P]>, Cow<[Scalar]>) =
        if scalars.par_iter().all(is_general) {
            (Cow::Borrowed(bases), Cow::Borrowed(scalars))
        } else {
            let (b, s): (Vec<P>, Vec<Scalar>) = (0..scalars.len())
                .into_par_iter()
                .with_min_len(1 << 10)
                .filter(|&i| is_general(&scalars[i]))
                .map(|i| (bases[i], scalars[i]))
                .unzip();
            (Cow::Owned(b), Cow::Owned(s))
        };
    let general = if general_scalars.len() < SMALL_MSM {
        general_bases
            .iter()
            .zip(general_scalars.iter())
            .fold(P::Curve::identity(), |acc, (b, s)| acc + *b * s)
    } else {
        P::pippenger(&general_bases, &scalar_bytes(&general_scalars))
    };
    Ok(ones + general)
}

/// Σ over used variables of scalar·base: `scalars` has one value per variable,
/// `bases` one point per variable that `density` marks as used (the key's
/// compressed a, b_g1, b_g2 queries).
pub fn msm_with_density<P: MsmAffine>(
    bases: &[P],
    density: &Density,
    scalars: &[Scalar],
) -> Result<P::Curve, Error>
where
    P::Curve: Send + Sync,
{
    if density.len() != scalars.len() || density.total() != bases.len() {
        return Err(Error::LengthMismatch {
            bases: bases.len(),
            scalars: density.total(),
        });
    }
    let selected: Vec<Scalar> = density.select(scalars).copied().collect();
    msm(bases, &selected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand_core::{RngCore, SeedableRng};

    fn naive<P: MsmAffine>(bases: &[P], scalars: &[Scalar]) -> P::Curve
    where
        P::Curve: Send + Sync,
    {
        bases
            .iter()
            .zip(scalars)
            .fold(P::Curve::identity(), |acc, (b, s)| acc + *b * s)
    }

    fn edge_scalars(n: usize, rng: &mut impl RngCore) -> Vec<Scalar> {
        (0..n)
            .map(|i| match i % 5 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => -Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    #[test]
    fn scalar_classes_agree_with_the_constant_time_comparisons() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
        // Near 0 and 1, and R mod r's neighbours (1's words in Montgomery form).
        let mut values = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::ONE.double(),
            Scalar::ONE + Scalar::ONE.double(),
            -Scalar::ONE.double(),
            Scalar::from(u64::MAX),
            <Scalar as ff::PrimeField>::ROOT_OF_UNITY,
        ];
        values.extend((0..1000).map(|_| Scalar::random(&mut rng)));
        values.extend((0..64).map(|k| Scalar::from(2u64).pow_vartime([k])));
        for value in values {
            let want = if bool::from(value.is_zero()) {
                ScalarClass::Zero
            } else if value == Scalar::ONE {
                ScalarClass::One
            } else {
                ScalarClass::General
            };
            assert_eq!(class_of(&value), want, "{value:?}");
            assert_eq!(is_general(&value), want == ScalarClass::General);
        }
    }

    #[test]
    fn msm_matches_naive_on_random_and_edge_inputs() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
        for n in [0usize, 1, 2, 3, 7, 31, 100] {
            let g1: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let g2: Vec<G2Affine> = (0..n)
                .map(|_| G2Projective::random(&mut rng).to_affine())
                .collect();
            let s = edge_scalars(n, &mut rng);
            assert_eq!(msm(&g1, &s).unwrap(), naive(&g1, &s), "G1 n={n}");
            assert_eq!(msm(&g2, &s).unwrap(), naive(&g2, &s), "G2 n={n}");
        }
        // Sizes where blst tiles the work over threads; all scalars general
        // (the bases are read in place) and with zeros and ones (gathered).
        for (n, all_general) in [(1000usize, true), (1000, false), (300, true)] {
            let g1: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let s = if all_general {
                (0..n).map(|_| Scalar::random(&mut rng)).collect()
            } else {
                edge_scalars(n, &mut rng)
            };
            assert_eq!(msm(&g1, &s).unwrap(), naive(&g1, &s), "G1 n={n}");
            if n < 1000 {
                let g2: Vec<G2Affine> = (0..n)
                    .map(|_| G2Projective::random(&mut rng).to_affine())
                    .collect();
                assert_eq!(msm(&g2, &s).unwrap(), naive(&g2, &s), "G2 n={n}");
            }
        }
        // Repeated bases and the identity as a base.
        let p = G1Projective::random(&mut rng).to_affine();
        let bases = vec![p, p, G1Affine::identity(), p, p, p, p, p, p, p, p, p];
        let s = edge_scalars(bases.len(), &mut rng);
        assert_eq!(msm(&bases, &s).unwrap(), naive(&bases, &s));
        assert!(msm(&bases, &s[1..]).is_err());
    }

    #[test]
    fn density_pairs_used_variables_with_compressed_bases() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
        let mut density = Density::with_len(40);
        for i in (0..40).step_by(3) {
            density.mark(i);
        }
        let bases: Vec<G1Affine> = (0..density.total())
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let scalars: Vec<Scalar> = (0..40).map(|_| Scalar::random(&mut rng)).collect();
        let used: Vec<Scalar> = density.select(&scalars).copied().collect();
        assert_eq!(
            msm_with_density(&bases, &density, &scalars).unwrap(),
            naive(&bases, &used)
        );
    }
}
