//! PoSt helpers for tests/filecoin_api.rs and examples/filecoin_compare.rs: configurations, keys, vanilla
//! proofs by filecoin-proofs' own calls, and bellperson's proof of the same
//! circuit for a byte comparison.
#![allow(dead_code)]

use std::collections::BTreeMap;

use bellperson::groth16 as bp;
use blstrs::Bls12;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{
    generate_fallback_sector_challenges, generate_single_vanilla_proof, FallbackPoStSectorProof,
    PoStConfig, PoStType, PrivateReplicaInfo, PublicReplicaInfo, WINDOW_POST_CHALLENGE_COUNT,
    WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT,
};
use groth16_gpu::filecoin::{self, PartitionRandomness};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use super::common::{self, ensure_params, porep_config, seal_sector, SealedSector, Tree};

pub fn ensure_post_params(config: &PoStConfig) {
    let vanilla = match config.typ {
        PoStType::Window => window_post_public_params::<Tree>(config).unwrap(),
        PoStType::Winning => winning_post_public_params::<Tree>(config).unwrap(),
    };
    ensure_params::<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>, FallbackPoStCompound<Tree>>(
        &vanilla,
    );
}

pub fn post_config(typ: PoStType) -> PoStConfig {
    let (challenge_count, sector_count) = match typ {
        PoStType::Window => (WINDOW_POST_CHALLENGE_COUNT, 2),
        PoStType::Winning => (WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT),
    };
    PoStConfig {
        sector_size: common::SECTOR_SIZE.into(),
        challenge_count,
        sector_count,
        typ,
        priority: false,
        // PoSt is registered at 1.1 (filecoin-proofs-api); 1.2's challenge
        // indices differ between WinningPoSt's prover and verifier.
        api_version: ApiVersion::V1_1_0,
    }
}

/// Vanilla PoSt proofs of `sectors` by filecoin-proofs' own calls.
pub fn post_vanilla_proofs(
    config: &PoStConfig,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    sectors: &[&SealedSector],
) -> Vec<FallbackPoStSectorProof<Tree>> {
    let ids: Vec<SectorId> = sectors.iter().map(|s| s.sector_id).collect();
    let challenges =
        generate_fallback_sector_challenges::<Tree>(config, randomness, &ids, prover_id).unwrap();
    sectors
        .iter()
        .map(|s| {
            let replica = PrivateReplicaInfo::<Tree>::new(
                s.replica.path().to_path_buf(),
                s.pre_commit.comm_r,
                s.cache_dir.path().to_path_buf(),
            )
            .unwrap();
            generate_single_vanilla_proof::<Tree>(
                config,
                s.sector_id,
                &replica,
                &challenges[&s.sector_id],
            )
            .unwrap()
        })
        .collect()
}

/// The sectors as WindowPoSt's verifier takes them.
pub fn public_replicas(sectors: &[SealedSector]) -> BTreeMap<SectorId, PublicReplicaInfo> {
    sectors
        .iter()
        .map(|s| {
            (
                s.sector_id,
                PublicReplicaInfo::new(s.pre_commit.comm_r).unwrap(),
            )
        })
        .collect()
}

/// Sectors sealed for the PoSt tests, all with one prover id, in sector id
/// order: WindowPoSt's verifier takes the sectors in that order (a
/// `BTreeMap`), so the prover's vanilla proofs come in it too, as Lotus
/// sends them.
pub fn sealed_for_post(count: usize, rng: &mut impl rand_core::RngCore) -> Vec<SealedSector> {
    let porep = porep_config(ApiVersion::V1_2_0, vec![]);
    let mut sectors: Vec<SealedSector> =
        (0..count).map(|_| seal_sector(&porep, &mut *rng)).collect();
    let prover_id = sectors[0].prover_id;
    for s in &mut sectors {
        // Sealing made each its own prover id; PoSt proves them for one.
        s.prover_id = prover_id;
    }
    sectors.sort_by_key(|s| u64::from(s.sector_id));
    sectors
}

/// A copy of vanilla PoSt proofs (not `Clone`), through their JSON.
pub fn copy_post(proofs: &[FallbackPoStSectorProof<Tree>]) -> Vec<FallbackPoStSectorProof<Tree>> {
    serde_json::from_value(serde_json::to_value(proofs).unwrap()).unwrap()
}

/// A one-partition PoSt proved by bellperson with the `.params` file our
/// call used: the circuit built as filecoin-proofs builds it.
pub fn bellperson_post(
    config: &PoStConfig,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla: &[FallbackPoStSectorProof<Tree>],
    r_s: &PartitionRandomness,
) -> Vec<u8> {
    let setup = compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::winning_post_setup_params(config).unwrap(),
        partitions: None,
        priority: false,
    };
    let public_params = FallbackPoStCompound::<Tree>::setup(&setup).unwrap();
    let public_inputs = fallback::PublicInputs {
        randomness: filecoin_proofs::as_safe_commitment(randomness, "randomness").unwrap(),
        prover_id: filecoin_proofs::as_safe_commitment(&prover_id, "prover_id").unwrap(),
        sectors: vanilla
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: None,
    };
    let partitioned = filecoin_proofs::partition_vanilla_proofs(
        config,
        &public_params.vanilla_params,
        &public_inputs,
        1,
        vanilla,
    )
    .unwrap();
    let circuit = FallbackPoStCompound::<Tree>::circuit(
        &public_inputs,
        Default::default(),
        &partitioned[0],
        &public_params.vanilla_params,
        Some(0),
    )
    .unwrap();
    let id = filecoin::cache_identifier::<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
        FallbackPoStCompound<Tree>,
    >(&public_params.vanilla_params);
    let bytes = std::fs::read(filecoin::params_path(&id)).unwrap();
    let params = bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap();
    let proofs =
        bp::create_proof_batch(vec![circuit], &params, r_s.r.clone(), r_s.s.clone()).unwrap();
    let mut out = Vec::new();
    proofs[0].write(&mut out).unwrap();
    out
}
