//! SnapDeals: filecoin-proofs' `generate_empty_sector_update_proof_with_vanilla`
//! with the SNARK work on a pool.

use filecoin_hashers::Domain;
use filecoin_proofs::{
    Commitment, DefaultPieceDomain, EmptySectorUpdateProof, PartitionProof, PoRepConfig,
    SectorUpdateConfig, TreeRHasher,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicInputs,
    SetupParams,
};

use super::compound::{prove_partitions, PartitionRandomness};
use super::FilecoinError;
use crate::error::catch_circuit_panic;
use crate::pool::ProverPool;
use crate::Error;

/// filecoin-proofs' `generate_empty_sector_update_proof_with_vanilla` with
/// the SNARK work on `pool`: the partitions' proofs, concatenated (192
/// bytes each). `Tree` is the sector size's shape, as for filecoin-proofs.
pub fn generate_empty_sector_update_proof_with_vanilla<
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
>(
    pool: &ProverPool,
    porep_config: &PoRepConfig,
    vanilla_proofs: Vec<PartitionProof<Tree>>,
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
) -> Result<EmptySectorUpdateProof, Error> {
    generate_empty_sector_update_proof_with_randomness(
        pool,
        porep_config,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        None,
    )
}

/// [`generate_empty_sector_update_proof_with_vanilla`] with each
/// partition's `r` and `s` given (random when `None`): for the same ones
/// the proofs are bellperson's bytes.
pub fn generate_empty_sector_update_proof_with_randomness<
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
>(
    pool: &ProverPool,
    porep_config: &PoRepConfig,
    vanilla_proofs: Vec<PartitionProof<Tree>>,
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    randomness: Option<PartitionRandomness>,
) -> Result<EmptySectorUpdateProof, Error> {
    // The crates assert and panic on some inputs: an error, not a panic.
    catch_circuit_panic(|| {
        let domain = |name: &str, bytes: &Commitment| {
            <TreeRHasher as filecoin_hashers::Hasher>::Domain::try_from_bytes(bytes)
                .map_err(|e| FilecoinError::InvalidInput(format!("{name}: {e:#}")))
        };
        let comm_r_old_safe = domain("comm_r_old", &comm_r_old)?;
        let comm_r_new_safe = domain("comm_r_new", &comm_r_new)?;
        let comm_d_new_safe = DefaultPieceDomain::try_from_bytes(&comm_d_new)
            .map_err(|e| FilecoinError::InvalidInput(format!("comm_d_new: {e:#}")))?;

        let config = SectorUpdateConfig::from_porep_config(porep_config);
        let partitions = usize::from(config.update_partitions);
        if vanilla_proofs.len() != partitions {
            return Err(FilecoinError::InvalidInput(format!(
                "{} vanilla partition proofs, a {}-byte sector's update has {partitions}",
                vanilla_proofs.len(),
                u64::from(config.sector_size)
            ))
            .into());
        }
        let public_inputs = PublicInputs {
            k: partitions,
            comm_r_old: comm_r_old_safe,
            comm_d_new: comm_d_new_safe,
            comm_r_new: comm_r_new_safe,
            h: config.h,
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: SetupParams {
                sector_bytes: u64::from(config.sector_size),
            },
            partitions: Some(partitions),
            priority: false,
        };
        let public_params = EmptySectorUpdateCompound::<Tree>::setup(&setup)
            .map_err(|e| FilecoinError::from_crate("sector update public parameters", e))?;
        let valid = EmptySectorUpdate::<Tree>::verify_all_partitions(
            &public_params.vanilla_params,
            &public_inputs,
            &vanilla_proofs,
        )
        .map_err(|e| FilecoinError::from_crate("verifying the sector update vanilla proofs", e))?;
        if !valid {
            return Err(FilecoinError::VanillaProofInvalid {
                what: format!("the sector update (partitions: {partitions})"),
            }
            .into());
        }
        let proofs = prove_partitions::<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
            EmptySectorUpdateCompound<Tree>,
        >(
            pool,
            &public_inputs,
            &vanilla_proofs,
            &public_params.vanilla_params,
            randomness,
        )?;
        Ok(EmptySectorUpdateProof(super::proof_bytes(&proofs)))
    })
}
