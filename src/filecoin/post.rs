//! WindowPoSt and WinningPoSt from vanilla proofs: filecoin-proofs'
//! `generate_window_post_with_vanilla` and
//! `generate_winning_post_with_vanilla` with the SNARK work on a pool.

use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, ChallengeSeed, FallbackPoStSectorProof,
    PoStConfig, PoStType, ProverId, SnarkProof,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use super::compound::{prove_partitions, PartitionRandomness};
use super::FilecoinError;
use crate::error::catch_circuit_panic;
use crate::pool::ProverPool;
use crate::Error;

/// filecoin-proofs' `generate_window_post_with_vanilla` with the SNARK
/// work on `pool`: one proof per partition of `post_config.sector_count`
/// sectors, concatenated (192 bytes each). As for filecoin-proofs, give
/// the vanilla proofs in sector id order: the verifier takes the sectors
/// in that order.
pub fn generate_window_post_with_vanilla<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
) -> Result<SnarkProof, Error> {
    if post_config.typ != PoStType::Window {
        return Err(invalid("the PoSt configuration is not for WindowPoSt"));
    }
    prove_post(
        pool,
        post_config,
        randomness,
        prover_id,
        vanilla_proofs,
        None,
    )
}

/// filecoin-proofs' `generate_winning_post_with_vanilla` with the SNARK
/// work on `pool` (one partition). Give `pool` at
/// [`Priority::Urgent`](crate::pool::Priority::Urgent) to go ahead of
/// queued batch work, as WinningPoSt has a deadline.
pub fn generate_winning_post_with_vanilla<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
) -> Result<SnarkProof, Error> {
    if post_config.typ != PoStType::Winning {
        return Err(invalid("the PoSt configuration is not for WinningPoSt"));
    }
    prove_post(
        pool,
        post_config,
        randomness,
        prover_id,
        vanilla_proofs,
        None,
    )
}

/// [`generate_window_post_with_vanilla`] or
/// [`generate_winning_post_with_vanilla`] (by `post_config.typ`) with each
/// partition's `r` and `s` given: for the same ones the proofs are
/// bellperson's bytes.
pub fn generate_post_with_vanilla_and_randomness<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    proof_randomness: PartitionRandomness,
) -> Result<SnarkProof, Error> {
    prove_post(
        pool,
        post_config,
        randomness,
        prover_id,
        vanilla_proofs,
        Some(proof_randomness),
    )
}

/// The vanilla setup and partition count filecoin-proofs uses for
/// `sectors` vanilla proofs (no count for one partition).
fn post_setup(
    post_config: &PoStConfig,
    sectors: usize,
) -> Result<(fallback::SetupParams, Option<usize>), Error> {
    match post_config.typ {
        PoStType::Window => {
            let partitions = sectors.div_ceil(post_config.sector_count.max(1));
            Ok((
                window_post_setup_params(post_config),
                (partitions > 1).then_some(partitions),
            ))
        }
        PoStType::Winning => {
            if sectors != post_config.sector_count {
                return Err(invalid(&format!(
                    "{sectors} vanilla proofs for a WinningPoSt over {} sectors",
                    post_config.sector_count
                )));
            }
            let setup = winning_post_setup_params(post_config)
                .map_err(|e| FilecoinError::from_crate("WinningPoSt setup parameters", e))?;
            Ok((setup, None))
        }
    }
}

fn prove_post<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    post_config: &PoStConfig,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    proof_randomness: Option<PartitionRandomness>,
) -> Result<SnarkProof, Error> {
    // The crates assert and panic on some inputs: an error, not a panic.
    catch_circuit_panic(|| {
        if vanilla_proofs.is_empty() {
            return Err(invalid("no vanilla proofs"));
        }
        let (vanilla_setup, partitions) = post_setup(post_config, vanilla_proofs.len())?;
        let randomness_safe: <Tree::Hasher as Hasher>::Domain =
            as_safe_commitment(randomness, "randomness").map_err(|e| invalid(&format!("{e:#}")))?;
        let prover_id_safe: <Tree::Hasher as Hasher>::Domain =
            as_safe_commitment(&prover_id, "prover_id").map_err(|e| invalid(&format!("{e:#}")))?;
        let setup = compound_proof::SetupParams {
            vanilla_params: vanilla_setup,
            partitions,
            priority: post_config.priority,
        };
        let public_params: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> =
            FallbackPoStCompound::setup(&setup)
                .map_err(|e| FilecoinError::from_crate("PoSt public parameters", e))?;
        let public_inputs = fallback::PublicInputs {
            randomness: randomness_safe,
            prover_id: prover_id_safe,
            sectors: vanilla_proofs
                .iter()
                .map(|proof| PublicSector {
                    id: proof.sector_id,
                    comm_r: proof.comm_r,
                })
                .collect(),
            k: None,
        };
        let sectors: Vec<u64> = vanilla_proofs
            .iter()
            .map(|p| u64::from(p.sector_id))
            .collect();
        let refused = |detail: String| -> Error {
            FilecoinError::VanillaProofInvalid {
                what: format!(
                    "the {:?}PoSt over sectors {sectors:?}{detail}",
                    post_config.typ
                ),
            }
            .into()
        };
        // filecoin-proofs' partitioning verifies the proofs it regroups.
        let partitioned = partition_vanilla_proofs(
            post_config,
            &public_params.vanilla_params,
            &public_inputs,
            partitions.unwrap_or(1),
            &vanilla_proofs,
        )
        .map_err(|e| refused(format!(" ({e:#})")))?;
        let valid = FallbackPoSt::<Tree>::verify_all_partitions(
            &public_params.vanilla_params,
            &public_inputs,
            &partitioned,
        )
        .map_err(|e| FilecoinError::from_crate("verifying the PoSt vanilla proofs", e))?;
        if !valid {
            return Err(refused(String::new()));
        }
        let proofs = prove_partitions::<
            FallbackPoSt<'_, Tree>,
            FallbackPoStCircuit<Tree>,
            FallbackPoStCompound<Tree>,
        >(
            pool,
            &public_inputs,
            &partitioned,
            &public_params.vanilla_params,
            proof_randomness,
        )?;
        Ok(super::proof_bytes(&proofs))
    })
}

fn invalid(what: &str) -> Error {
    FilecoinError::InvalidInput(what.to_string()).into()
}
