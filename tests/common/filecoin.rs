//! Filecoin's real circuits, built as storage-proofs 19.1's own tests build
//! them: a PoRep partition from a small sector replicated in a temporary
//! folder, and a WindowPoSt (fallback PoSt) partition over small sectors.
//! Shared by tests/filecoin_circuits.rs and benches/filecoin_synthesis.rs
//! (included by path).
#![allow(dead_code)]

use blstrs::Scalar;
use ff::{Field, PrimeField};
use filecoin_hashers::{
    poseidon::PoseidonHasher, sha256::Sha256Hasher, Domain, HashFunction, Hasher,
};
use generic_array::typenum::{U0, U8};
use rand_core::RngCore;
use storage_proofs_core::{
    api_version::ApiVersion,
    compound_proof::{self, CompoundProof},
    drgraph::BASE_DEGREE,
    merkle::{generate_tree, DiskTree, LCTree},
    test_helper::setup_replica,
    util::NODE_SIZE,
};
use storage_proofs_porep::stacked::{
    self, Challenges, PrivateInputs, PublicInputs, StackedCompound, StackedDrg, TemporaryAuxCache,
    EXP_DEGREE,
};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PrivateSector, PublicSector,
};
use tempfile::tempdir;

/// The 2 KiB sector's tree shape (one base tree of arity 8).
pub type PorepTree = DiskTree<PoseidonHasher, U8, U0, U0>;
pub type PorepCircuit = stacked::StackedCircuit<PorepTree, Sha256Hasher>;
pub type PostTree = LCTree<PoseidonHasher, U8, U0, U0>;
pub type PostCircuit = FallbackPoStCircuit<PostTree>;

/// A circuit with witness and the public inputs the crate computes for it
/// (without the constant one).
pub struct Partition<C> {
    pub circuit: C,
    pub inputs: Vec<Scalar>,
}

/// A set of partitions of one shape, with the blank circuit that keys are
/// generated from.
pub struct Partitions<C> {
    pub blank: C,
    pub partitions: Vec<Partition<C>>,
}

/// Sizes of a PoRep sector and its proof.
#[derive(Clone, Copy, Debug)]
pub struct PorepConfig {
    /// Sector size in 32-byte nodes (64 = 2 KiB).
    pub nodes: usize,
    pub layers: usize,
    pub challenges_per_partition: usize,
    pub partitions: usize,
}

impl PorepConfig {
    /// One partition of a 2 KiB sector, 2 layers, 1 challenge: the cheapest
    /// real PoRep partition.
    pub const SMALL: Self = Self {
        nodes: 64,
        layers: 2,
        challenges_per_partition: 1,
        partitions: 1,
    };
}

/// Replicates a random sector of `config.nodes` nodes in a temporary folder
/// and builds its partition circuits; the crate checks the vanilla proofs on
/// the way. The folder is gone when this returns: the circuits hold all they need.
pub fn porep_partitions(config: PorepConfig, rng: &mut impl RngCore) -> Partitions<PorepCircuit> {
    let setup = compound_proof::SetupParams {
        vanilla_params: stacked::SetupParams {
            nodes: config.nodes,
            degree: BASE_DEGREE,
            expansion_degree: EXP_DEGREE,
            porep_id: [7; 32],
            challenges: Challenges::new_interactive(config.challenges_per_partition),
            num_layers: config.layers,
            api_version: ApiVersion::V1_1_0,
            api_features: vec![],
        },
        partitions: Some(config.partitions),
        priority: false,
    };
    let params = StackedCompound::<PorepTree, Sha256Hasher>::setup(&setup).expect("porep setup");

    // Sector data must be valid field elements, 32 bytes each.
    let data: Vec<u8> = (0..config.nodes)
        .flat_map(|_| Scalar::random(&mut *rng).to_repr())
        .collect();
    let replica_id: <PoseidonHasher as Hasher>::Domain = Scalar::random(&mut *rng).into();

    let dir = tempdir().expect("temporary folder");
    let replica_path = dir.path().join("replica");
    let mut replica = setup_replica(&data, &replica_path);
    let (labels, _) = StackedDrg::<PorepTree, Sha256Hasher>::replicate_phase1(
        &params.vanilla_params,
        &replica_id,
        dir.path(),
    )
    .expect("labelling");
    let (tau, (p_aux, t_aux)) = StackedDrg::<PorepTree, Sha256Hasher>::replicate_phase2(
        &params.vanilla_params,
        labels,
        replica.as_mut().into(),
        None,
        dir.path().to_path_buf(),
        replica_path.clone(),
    )
    .expect("encoding");
    drop(replica);

    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let public = PublicInputs {
        replica_id,
        seed: Some(seed),
        tau: Some(tau),
        k: None,
    };
    let private = PrivateInputs {
        p_aux,
        t_aux: TemporaryAuxCache::new(&t_aux, replica_path, false).expect("trees from disk"),
    };
    let partitions = StackedCompound::circuit_for_test_all(&params, &public, &private)
        .expect("partition circuits")
        .into_iter()
        .map(|(circuit, inputs)| Partition { circuit, inputs })
        .collect();
    let blank = <StackedCompound<PorepTree, Sha256Hasher> as CompoundProof<_, _>>::blank_circuit(
        &params.vanilla_params,
    );
    Partitions { blank, partitions }
}

/// Sizes of a WindowPoSt over 2 KiB sectors.
#[derive(Clone, Copy, Debug)]
pub struct PostConfig {
    pub sectors: usize,
    pub challenges_per_sector: usize,
}

/// Builds the WindowPoSt circuit of one partition over `config.sectors`
/// random sectors, their trees in a temporary folder.
pub fn post_partition(config: PostConfig, rng: &mut impl RngCore) -> Partitions<PostCircuit> {
    let leaves = 64;
    let setup = compound_proof::SetupParams {
        vanilla_params: fallback::SetupParams {
            sector_size: (leaves * NODE_SIZE) as u64,
            challenge_count: config.challenges_per_sector,
            sector_count: config.sectors,
            api_version: ApiVersion::V1_1_0,
        },
        partitions: Some(1),
        priority: false,
    };
    let params = FallbackPoStCompound::<PostTree>::setup(&setup).expect("post setup");

    let dir = tempdir().expect("temporary folder");
    let trees: Vec<_> = (0..config.sectors)
        .map(|_| generate_tree::<PostTree, _>(&mut *rng, leaves, Some(dir.path().to_path_buf())).1)
        .collect();
    let mut private_sectors = Vec::new();
    let mut public_sectors = Vec::new();
    for (id, tree) in trees.iter().enumerate() {
        let comm_c = <PoseidonHasher as Hasher>::Domain::random(&mut *rng);
        let comm_r_last = tree.root();
        let comm_r = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
        private_sectors.push(PrivateSector {
            tree,
            comm_c,
            comm_r_last,
        });
        public_sectors.push(PublicSector {
            id: (id as u64).into(),
            comm_r,
        });
    }
    let public = fallback::PublicInputs {
        randomness: <PoseidonHasher as Hasher>::Domain::random(&mut *rng),
        prover_id: <PoseidonHasher as Hasher>::Domain::random(&mut *rng),
        sectors: public_sectors,
        k: None,
    };
    let private = fallback::PrivateInputs {
        sectors: &private_sectors,
    };
    let partitions = FallbackPoStCompound::circuit_for_test_all(&params, &public, &private)
        .expect("post circuits")
        .into_iter()
        .map(|(circuit, inputs)| Partition { circuit, inputs })
        .collect();
    let blank = <FallbackPoStCompound<PostTree> as CompoundProof<FallbackPoSt<'_, PostTree>, _>>::blank_circuit(
        &params.vanilla_params,
    );
    Partitions { blank, partitions }
}
