//! The SNARK half of a storage-proofs `CompoundProof`, on a [`ProverPool`]:
//! the crate's own circuits built from the vanilla proofs (as its
//! `circuit_proofs` builds them), proved with the key from filecoin-proofs'
//! parameter cache through the circuit's kept shape.

use std::sync::Arc;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;

use super::{keys, FilecoinError};
use crate::error::catch_circuit_panic;
use crate::groth16::shape_cache::{self, ShapeId};
use crate::pool::ProverPool;
use crate::synthesis::CircuitShape;
use crate::{Error, Proof};

/// The `r` and `s` of each partition's proof, in partition order.
#[derive(Clone, Debug)]
pub struct PartitionRandomness {
    /// Each partition's `r`.
    pub r: Vec<Scalar>,
    /// Each partition's `s`.
    pub s: Vec<Scalar>,
}

impl PartitionRandomness {
    /// Fresh random `r` and `s` for `partitions` proofs, from the operating
    /// system's generator (as bellperson draws them for Filecoin).
    pub fn random(partitions: usize) -> Self {
        let mut rng = rand_core::OsRng;
        let r = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();
        let s = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();
        Self { r, s }
    }
}

/// The parameter cache identifier of compound proof `P` for `vanilla_params`
/// (the name of its `.params`, `.vk` and `.meta` files).
pub fn cache_identifier<'a, S, C, P>(vanilla_params: &S::PublicParams) -> String
where
    S: ProofScheme<'a>,
    C: Circuit<Scalar> + CircuitComponent + Send,
    P: CompoundProof<'a, S, C>,
    S::Proof: Sync + Send,
    S::PublicParams: storage_proofs_core::parameter_cache::ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
{
    <P as CacheableParameters<C, S::PublicParams>>::cache_identifier(vanilla_params)
}

/// Proves one partition circuit per vanilla proof (partition `k` built
/// from proof `k` and `public_inputs`, as storage-proofs'
/// `CompoundProof::circuit_proofs` builds them) on `pool`, with the key of
/// `P`'s circuit from filecoin-proofs' parameter cache; the proofs in
/// partition order.
pub(crate) fn prove_partitions<'a, S, C, P>(
    pool: &ProverPool,
    public_inputs: &S::PublicInputs,
    vanilla_proofs: &[S::Proof],
    vanilla_params: &S::PublicParams,
    randomness: Option<PartitionRandomness>,
) -> Result<Vec<Proof>, Error>
where
    S: ProofScheme<'a>,
    C: Circuit<Scalar> + CircuitComponent + Send,
    P: CompoundProof<'a, S, C>,
    S::Proof: Sync + Send,
    S::PublicParams: storage_proofs_core::parameter_cache::ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
{
    let partitions = vanilla_proofs.len();
    if partitions == 0 {
        return Err(FilecoinError::InvalidInput("no vanilla proofs to prove".into()).into());
    }
    let randomness = randomness.unwrap_or_else(|| PartitionRandomness::random(partitions));
    if randomness.r.len() != partitions || randomness.s.len() != partitions {
        return Err(FilecoinError::InvalidInput(format!(
            "{partitions} partitions, but {} r and {} s given",
            randomness.r.len(),
            randomness.s.len()
        ))
        .into());
    }
    let cache_id = cache_identifier::<S, C, P>(vanilla_params);
    let key = keys::proving_key(&cache_id)?;

    let circuits = catch_circuit_panic(|| {
        vanilla_proofs
            .par_iter()
            .enumerate()
            .map(|(k, proof)| {
                P::circuit(
                    public_inputs,
                    C::ComponentPrivateInputs::default(),
                    proof,
                    vanilla_params,
                    Some(k),
                )
                .map_err(|e| FilecoinError::from_crate("building a partition circuit", e))
            })
            .collect::<Result<Vec<C>, Error>>()
    })?;

    // Recorded from the blank circuit, the one the key was made from, so
    // a kept shape is right for every later call: a circuit that does not
    // fit it is wrong (Error::ShapeMismatch or Error::Unsatisfied).
    let id = ShapeId::of::<C>(&key);
    let shape = match shape_cache::cached(&id) {
        Some(shape) => shape,
        None => {
            let started = std::time::Instant::now();
            let blank = catch_circuit_panic(|| Ok(P::blank_circuit(vanilla_params)))?;
            let shape = Arc::new(catch_circuit_panic(|| CircuitShape::record(blank))?);
            log::info!(
                "{cache_id}: shape recorded in {:.1} s ({} constraints)",
                started.elapsed().as_secs_f64(),
                shape.num_constraints()
            );
            shape_cache::remember(id, shape.clone());
            shape
        }
    };
    pool.prove_circuits(&key, Some(&shape), circuits, randomness.r, randomness.s)
}
