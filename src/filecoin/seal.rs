//! PoRep's commit phase 2 (C2): the SNARK over the vanilla proofs of
//! commit phase 1, for every sector size and API version filecoin-proofs
//! 19.1 supports, interactive and non-interactive (NI-PoRep).

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    aggregate_seal_commit_proofs, as_safe_commitment, parameters::setup_params, verify_seal,
    DefaultPieceDomain, DefaultPieceHasher, PoRepConfig, ProverId, SealCommitOutput,
    SealCommitPhase1Output, VanillaSealProof,
};
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg, Tau,
};

use super::compound::{prove_partitions, PartitionRandomness};
use super::FilecoinError;
use crate::error::catch_circuit_panic;
use crate::pool::ProverPool;
use crate::Error;

/// filecoin-proofs' `seal_commit_phase2` with the SNARK work on `pool`:
/// the partitions' proofs (concatenated, 192 bytes each), or for
/// NI-PoRep their aggregate, checked with filecoin-proofs' `verify_seal`
/// before they are returned. `Tree` is the sector size's shape, as for
/// filecoin-proofs (`SectorShape2KiB`, ..., `SectorShape64GiB`).
///
/// The key is the `.params` file of filecoin-proofs' parameter cache that
/// filecoin-proofs would use, read once and kept.
pub fn seal_commit_phase2<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    porep_config: &PoRepConfig,
    phase1_output: SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: SectorId,
) -> Result<SealCommitOutput, Error> {
    seal_commit_phase2_with_randomness(
        pool,
        porep_config,
        phase1_output,
        prover_id,
        sector_id,
        None,
    )
}

/// [`seal_commit_phase2`] with each partition's `r` and `s` given (random
/// when `None`): for the same ones the partition proofs are bellperson's
/// bytes.
pub fn seal_commit_phase2_with_randomness<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    porep_config: &PoRepConfig,
    phase1_output: SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: SectorId,
    randomness: Option<PartitionRandomness>,
) -> Result<SealCommitOutput, Error> {
    // The crates assert and panic on some inputs: an error, not a panic.
    catch_circuit_panic(|| {
        let (comm_d, comm_r, seed, ticket) = (
            phase1_output.comm_d,
            phase1_output.comm_r,
            phase1_output.seed,
            phase1_output.ticket,
        );
        check_replica_id(porep_config, &phase1_output, prover_id, sector_id)?;
        let output = seal_commit_phase2_circuit_proofs(
            pool,
            porep_config,
            phase1_output,
            sector_id,
            randomness,
        )?;
        let proof = if porep_config.feature_enabled(ApiFeature::NonInteractivePoRep) {
            if porep_config.api_version < ApiFeature::NonInteractivePoRep.first_supported_version()
            {
                return Err(FilecoinError::InvalidInput(format!(
                    "API version {} does not support NI-PoRep",
                    porep_config.api_version
                ))
                .into());
            }
            aggregate_seal_commit_proofs::<Tree>(
                porep_config,
                &[comm_r],
                &[seed],
                &[output],
                bellperson::groth16::aggregate::AggregateVersion::V2,
            )
            .map_err(|e| FilecoinError::from_crate("aggregating the NI-PoRep proofs", e))?
        } else {
            output.proof
        };
        let valid = verify_seal::<Tree>(
            porep_config,
            comm_r,
            comm_d,
            prover_id,
            sector_id,
            ticket,
            seed,
            &proof,
        )
        .map_err(|e| FilecoinError::from_crate("verifying the seal proof", e))?;
        if !valid {
            return Err(
                FilecoinError::NotVerified(format!("seal proof of sector {sector_id}")).into(),
            );
        }
        Ok(SealCommitOutput { proof })
    })
}

/// filecoin-proofs' `seal_commit_phase2_circuit_proofs` on `pool`: each
/// partition's proof (192 bytes, concatenated in partition order), not
/// aggregated nor verified. The vanilla proofs are checked first: their
/// count, their sector size, and against the public inputs.
pub fn seal_commit_phase2_circuit_proofs<Tree: 'static + MerkleTreeTrait>(
    pool: &ProverPool,
    porep_config: &PoRepConfig,
    phase1_output: SealCommitPhase1Output<Tree>,
    sector_id: SectorId,
    randomness: Option<PartitionRandomness>,
) -> Result<SealCommitOutput, Error> {
    // The crates assert and panic on some inputs: an error, not a panic.
    catch_circuit_panic(|| {
        let SealCommitPhase1Output {
            vanilla_proofs,
            comm_d,
            comm_r,
            replica_id,
            seed,
            ticket: _,
        } = phase1_output;
        let invalid =
            |what: &str| -> Error { FilecoinError::InvalidInput(what.to_string()).into() };
        if comm_d == [0; 32] {
            return Err(invalid("comm_d is all zero"));
        }
        if comm_r == [0; 32] {
            return Err(invalid("comm_r is all zero"));
        }
        if seed == [0; 32] {
            return Err(invalid("the PoRep challenge seed is all zero"));
        }
        if vanilla_proofs.is_empty() || vanilla_proofs.iter().any(Vec::is_empty) {
            return Err(invalid("the C1 output holds no vanilla proofs"));
        }
        let comm_r_safe = as_safe_commitment(&comm_r, "comm_r")
            .map_err(|e| FilecoinError::InvalidInput(format!("{e:#}")))?;
        let comm_d_safe = DefaultPieceDomain::try_from_bytes(&comm_d)
            .map_err(|e| FilecoinError::InvalidInput(format!("comm_d: {e:#}")))?;
        check_sector_size(porep_config, &vanilla_proofs)?;

        let public_inputs = stacked::PublicInputs {
            replica_id,
            tau: Some(Tau {
                comm_d: comm_d_safe,
                comm_r: comm_r_safe,
            }),
            k: None,
            seed: Some(seed),
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: setup_params(porep_config)
                .map_err(|e| FilecoinError::from_crate("PoRep setup parameters", e))?,
            partitions: Some(usize::from(porep_config.partitions)),
            priority: false,
        };
        let public_params = StackedCompound::<Tree, DefaultPieceHasher>::setup(&setup)
            .map_err(|e| FilecoinError::from_crate("PoRep public parameters", e))?;
        let partitions = usize::from(porep_config.partitions);
        if vanilla_proofs.len() != partitions {
            return Err(FilecoinError::InvalidInput(format!(
            "the C1 output holds {} partitions of vanilla proofs, the configuration has {partitions}",
            vanilla_proofs.len()
        ))
        .into());
        }
        let valid = StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
            &public_params.vanilla_params,
            &public_inputs,
            &vanilla_proofs,
        )
        .map_err(|e| FilecoinError::from_crate("verifying the PoRep vanilla proofs", e))?;
        if !valid {
            return Err(FilecoinError::VanillaProofInvalid {
                what: format!("sector {sector_id}'s PoRep (partitions: {partitions})"),
            }
            .into());
        }

        let proofs = prove_partitions::<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            StackedCircuit<Tree, DefaultPieceHasher>,
            StackedCompound<Tree, DefaultPieceHasher>,
        >(
            pool,
            &public_inputs,
            &vanilla_proofs,
            &public_params.vanilla_params,
            randomness,
        )?;
        Ok(SealCommitOutput {
            proof: super::proof_bytes(&proofs),
        })
    })
}

/// The C1 output's replica id is the one `prover_id`, `sector_id`, its
/// ticket and comm_d give (else the proof could not verify for them).
fn check_replica_id<Tree: MerkleTreeTrait>(
    porep_config: &PoRepConfig,
    phase1_output: &SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: SectorId,
) -> Result<(), Error> {
    let comm_d = DefaultPieceDomain::try_from_bytes(&phase1_output.comm_d)
        .map_err(|e| FilecoinError::InvalidInput(format!("comm_d: {e:#}")))?;
    let expected: <Tree::Hasher as Hasher>::Domain = generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        sector_id.into(),
        &phase1_output.ticket,
        comm_d,
        &porep_config.porep_id,
    );
    if expected != phase1_output.replica_id {
        return Err(FilecoinError::InvalidInput(format!(
            "the C1 output's replica id is not the one of prover id, sector {sector_id}, \
             ticket, comm_d and PoRep id (another sector, prover or PoRep id?)"
        ))
        .into());
    }
    Ok(())
}

/// The vanilla proofs' sector size (from their comm_d inclusion paths, a
/// binary tree over the sector's nodes) is the configuration's.
fn check_sector_size<Tree: MerkleTreeTrait>(
    porep_config: &PoRepConfig,
    vanilla_proofs: &[Vec<VanillaSealProof<Tree>>],
) -> Result<(), Error> {
    let expected = u64::from(porep_config.sector_size);
    for proof in vanilla_proofs.iter().flatten() {
        let depth = proof.comm_d_proofs.path().len() as u32;
        let found = 1u64
            .checked_shl(depth)
            .map(|nodes| nodes * NODE_SIZE as u64)
            .unwrap_or(u64::MAX);
        if found != expected {
            return Err(FilecoinError::SectorSizeMismatch { expected, found }.into());
        }
    }
    Ok(())
}
