use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Group};
use rayon::prelude::*;

use crate::synthesis::Density;
use crate::Error;

/// Below this many general scalars a plain sum of products beats Pippenger's setup.
const SMALL_MSM: usize = 8;

/// An affine group whose MSM blstrs (blst's parallel Pippenger) computes.
pub trait MsmAffine: PrimeCurveAffine<Scalar = Scalar> + Send + Sync
where
    Self::Curve: Send + Sync,
{
    /// blst's MSM over projective bases.
    fn pippenger(bases: &[Self::Curve], scalars: &[Scalar]) -> Self::Curve;
}

impl MsmAffine for G1Affine {
    fn pippenger(bases: &[G1Projective], scalars: &[Scalar]) -> G1Projective {
        G1Projective::multi_exp(bases, scalars)
    }
}

impl MsmAffine for G2Affine {
    fn pippenger(bases: &[G2Projective], scalars: &[Scalar]) -> G2Projective {
        G2Projective::multi_exp(bases, scalars)
    }
}

/// Σ scalars[i]·bases[i].
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
        .filter(|&i| scalars[i] == Scalar::ONE)
        .fold(P::Curve::identity, |acc, i| acc + bases[i])
        .reduce(P::Curve::identity, |x, y| x + y);
    let (general_bases, general_scalars): (Vec<P::Curve>, Vec<Scalar>) = (0..scalars.len())
        .into_par_iter()
        .with_min_len(1 << 10)
        .filter(|&i| !bool::from(scalars[i].is_zero()) && scalars[i] != Scalar::ONE)
        .map(|i| (bases[i].to_curve(), scalars[i]))
        .unzip();
    let general = if general_scalars.len() < SMALL_MSM {
        general_bases
            .iter()
            .zip(&general_scalars)
            .fold(P::Curve::identity(), |acc, (b, s)| acc + *b * s)
    } else {
        P::pippenger(&general_bases, &general_scalars)
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
