use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;

use super::Proof;
use crate::backend::cpu::msm;
use crate::params::VerifyingKey;
use crate::Error;

/// A verifying key with its pairing-side values computed once.
#[derive(Clone, Debug)]
pub struct PreparedVerifyingKey {
    alpha_g1_beta_g2: Gt,
    neg_gamma_g2: G2Prepared,
    neg_delta_g2: G2Prepared,
    ic: Vec<G1Affine>,
}

/// Prepares `vk` for verification.
pub fn prepare_verifying_key(vk: &VerifyingKey) -> PreparedVerifyingKey {
    PreparedVerifyingKey {
        alpha_g1_beta_g2: blstrs::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma_g2: (-vk.gamma_g2).into(),
        neg_delta_g2: (-vk.delta_g2).into(),
        ic: vk.ic.clone(),
    }
}

impl PreparedVerifyingKey {
    /// ic[0] + Σ inputs[i]·ic[i+1].
    fn input_commitment(&self, public_inputs: &[Scalar]) -> Result<G1Projective, Error> {
        if public_inputs.len() + 1 != self.ic.len() {
            return Err(Error::PublicInputCount {
                expected: self.ic.len().saturating_sub(1),
                given: public_inputs.len(),
            });
        }
        Ok(msm(&self.ic[1..], public_inputs)? + self.ic[0])
    }
}

/// Checks one proof against its public inputs (without the constant one).
///
/// Returns `Ok(false)` for a proof that does not verify, an error only for
/// arguments that do not fit the key.
pub fn verify_proof(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public_inputs: &[Scalar],
) -> Result<bool, Error> {
    let acc = pvk.input_commitment(public_inputs)?.to_affine();
    // e(A,B) · e(acc,-γ) · e(C,-δ) = e(α,β), with one final exponentiation.
    let b = G2Prepared::from(proof.b);
    let ml = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc, &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2)
}

/// Checks many proofs at once with a random linear combination: one final
/// exponentiation for the batch. `false` if any proof is invalid (with
/// probability 1 - 2^-128 over `rng`).
pub fn verify_proofs_batch<R: RngCore>(
    pvk: &PreparedVerifyingKey,
    rng: &mut R,
    proofs: &[&Proof],
    public_inputs: &[Vec<Scalar>],
) -> Result<bool, Error> {
    if proofs.len() != public_inputs.len() {
        return Err(Error::InvalidBatch(format!(
            "{} proofs but {} public input lists",
            proofs.len(),
            public_inputs.len()
        )));
    }
    if proofs.is_empty() {
        return Ok(true);
    }
    let weights: Vec<Scalar> = (0..proofs.len())
        .map(|_| {
            let mut bytes = [0u64; 2];
            bytes.iter_mut().for_each(|w| *w = rng.next_u64());
            Scalar::from_u128(((bytes[0] as u128) << 64) | bytes[1] as u128 | 1)
        })
        .collect();
    let mut acc_inputs = G1Projective::identity();
    let mut acc_c = G1Projective::identity();
    let mut weighted_a = Vec::with_capacity(proofs.len());
    let mut prepared_b = Vec::with_capacity(proofs.len());
    for ((proof, inputs), w) in proofs.iter().zip(public_inputs).zip(&weights) {
        acc_inputs += pvk.input_commitment(inputs)? * w;
        acc_c += proof.c * w;
        weighted_a.push((proof.a * w).to_affine());
        prepared_b.push(G2Prepared::from(proof.b));
    }
    let (acc_inputs, acc_c) = (acc_inputs.to_affine(), acc_c.to_affine());
    let mut terms: Vec<(&G1Affine, &G2Prepared)> = weighted_a.iter().zip(&prepared_b).collect();
    terms.push((&acc_inputs, &pvk.neg_gamma_g2));
    terms.push((&acc_c, &pvk.neg_delta_g2));
    let lhs = Bls12::multi_miller_loop(&terms).final_exponentiation();
    let weight_sum = weights.iter().fold(Scalar::ZERO, |acc, w| acc + w);
    Ok(lhs == pvk.alpha_g1_beta_g2 * weight_sum)
}
