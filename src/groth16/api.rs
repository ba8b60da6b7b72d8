//! Entry points shaped like bellperson's, so Filecoin code can switch with
//! small changes.

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;

use super::{prove, prove_batch, Proof};
use crate::params::ProvingKey;
use crate::synthesis::synthesize;
use crate::Error;

/// Synthesizes `circuit` and proves it with the given `r` and `s`.
pub fn create_proof<C: Circuit<Scalar>>(
    circuit: C,
    key: &ProvingKey,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, Error> {
    let assignment = synthesize(circuit)?;
    prove(key, &assignment, r, s)
}

/// [`create_proof`] with `r` then `s` drawn from `rng`.
pub fn create_random_proof<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    key: &ProvingKey,
    rng: &mut R,
) -> Result<Proof, Error> {
    let r = Scalar::random(&mut *rng);
    let s = Scalar::random(&mut *rng);
    create_proof(circuit, key, r, s)
}

/// Synthesizes the circuits in parallel and proves each with its `r` and `s`.
pub fn create_proof_batch<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    key: &ProvingKey,
    r_s: Vec<Scalar>,
    s_s: Vec<Scalar>,
) -> Result<Vec<Proof>, Error> {
    if circuits.len() != r_s.len() || circuits.len() != s_s.len() {
        return Err(Error::InvalidBatch(format!(
            "{} circuits, {} r values, {} s values",
            circuits.len(),
            r_s.len(),
            s_s.len()
        )));
    }
    let assignments = circuits
        .into_par_iter()
        .map(synthesize)
        .collect::<Result<Vec<_>, _>>()?;
    prove_batch(key, &assignments, &r_s, &s_s)
}

/// [`create_proof_batch`] with all `r` values, then all `s` values, drawn
/// from `rng` (bellperson's order).
pub fn create_random_proof_batch<C: Circuit<Scalar> + Send, R: RngCore>(
    circuits: Vec<C>,
    key: &ProvingKey,
    rng: &mut R,
) -> Result<Vec<Proof>, Error> {
    let r_s = (0..circuits.len())
        .map(|_| Scalar::random(&mut *rng))
        .collect();
    let s_s = (0..circuits.len())
        .map(|_| Scalar::random(&mut *rng))
        .collect();
    create_proof_batch(circuits, key, r_s, s_s)
}
