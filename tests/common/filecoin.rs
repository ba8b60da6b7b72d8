//! Filecoin's real circuits, built as storage-proofs 19.1's own tests build
//! them: a PoRep partition from a small sector replicated in a temporary
//! folder, and a WindowPoSt (fallback PoSt) partition over small sectors.
//! Shared by tests/filecoin_circuits.rs and benches/filecoin_synthesis.rs
//! (included by path).
#![allow(dead_code)]

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use filecoin_hashers::{
    poseidon::PoseidonHasher, sha256::Sha256Hasher, Domain, HashFunction, Hasher,
};
use generic_array::typenum::{U0, U8};
use groth16_gpu::synthesis::{CircuitShape, JoinedInto, WitnessAssignment};
use rand_core::RngCore;
use rayon::prelude::*;
use storage_proofs_core::proof::ProofScheme;
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
    porep_partitions_and_parts(config, rng).0
}

/// [`porep_partitions`], with each partition also as its [`PorepParts`].
pub fn porep_partitions_and_parts(
    config: PorepConfig,
    rng: &mut impl RngCore,
) -> (Partitions<PorepCircuit>, Vec<PorepParts>) {
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
    let vanilla = StackedDrg::<PorepTree, Sha256Hasher>::prove_all_partitions(
        &params.vanilla_params,
        &public,
        &private,
        config.partitions,
    )
    .expect("vanilla proofs");
    assert!(
        StackedDrg::<PorepTree, Sha256Hasher>::verify_all_partitions(
            &params.vanilla_params,
            &public,
            &vanilla
        )
        .expect("vanilla verification"),
        "the vanilla proofs do not verify"
    );
    let mut partitions = Vec::with_capacity(vanilla.len());
    let mut parts = Vec::with_capacity(vanilla.len());
    for (k, proofs) in vanilla.into_iter().enumerate() {
        let partition_public =
            <StackedDrg<'_, PorepTree, Sha256Hasher> as ProofScheme<'_>>::with_partition(
                public.clone(),
                Some(k),
            );
        let inputs = StackedCompound::<PorepTree, Sha256Hasher>::generate_public_inputs(
            &partition_public,
            &params.vanilla_params,
            Some(k),
        )
        .expect("public inputs");
        let circuit = StackedCompound::<PorepTree, Sha256Hasher>::circuit(
            &partition_public,
            (),
            &proofs,
            &params.vanilla_params,
            Some(k),
        )
        .expect("partition circuit");
        partitions.push(Partition { circuit, inputs });
        let tau = partition_public.tau.expect("tau is set");
        parts.push(PorepParts {
            replica_id,
            comm_d: tau.comm_d,
            comm_r: tau.comm_r,
            comm_r_last: proofs[0].comm_r_last(),
            comm_c: proofs[0].comm_c(),
            proofs,
        });
    }
    let blank = <StackedCompound<PorepTree, Sha256Hasher> as CompoundProof<_, _>>::blank_circuit(
        &params.vanilla_params,
    );
    (Partitions { blank, partitions }, parts)
}

type PoseidonDomain = <PoseidonHasher as Hasher>::Domain;

/// A PoRep partition's circuit as its parts: the commitments every part
/// shares and one vanilla proof per challenge. Synthesized whole it is the
/// partition's circuit (storage-proofs' own `StackedCircuit::synthesize`);
/// [`witness_in_parts`](Self::witness_in_parts) synthesizes its challenges
/// on separate threads into the same witness.
#[derive(Clone)]
pub struct PorepParts {
    replica_id: PoseidonDomain,
    comm_d: <Sha256Hasher as Hasher>::Domain,
    comm_r: PoseidonDomain,
    comm_r_last: PoseidonDomain,
    comm_c: PoseidonDomain,
    proofs: Vec<stacked::Proof<PorepTree, Sha256Hasher>>,
}

impl PorepParts {
    /// The shared beginning, then the challenges of `proofs`, as the
    /// partition circuit synthesizes them.
    fn synthesize_challenges<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: CS,
        proofs: &[stacked::Proof<PorepTree, Sha256Hasher>],
    ) -> Result<(), SynthesisError> {
        PorepCircuit::synthesize(
            cs,
            Some(self.replica_id),
            Some(self.comm_d),
            Some(self.comm_r),
            Some(self.comm_r_last),
            Some(self.comm_c),
            proofs.iter().cloned().map(Into::into).collect(),
        )
    }

    /// Challenges in the partition.
    pub fn challenges(&self) -> usize {
        self.proofs.len()
    }

    /// The partition's witness with its challenges cut into `parts` runs
    /// (at most one a challenge), each synthesized on a thread of its own
    /// with the shared beginning, then joined in order: the witness one
    /// synthesis makes (`WitnessAssignment::join_parts`).
    pub fn witness_in_parts(
        &self,
        shape: &CircuitShape,
        parts: usize,
    ) -> Result<WitnessAssignment, groth16_gpu::Error> {
        self.witness_runs_joined(shape, parts, WitnessAssignment::join_parts)
    }

    /// [`witness_in_parts`](Self::witness_in_parts) with the aux values
    /// joined into `aux_out` (page-locked memory, say, reused from one
    /// partition to the next; `WitnessAssignment::join_parts_into`).
    pub fn witness_in_parts_into(
        &self,
        shape: &CircuitShape,
        parts: usize,
        aux_out: &mut [Scalar],
    ) -> Result<JoinedInto, groth16_gpu::Error> {
        self.witness_runs_joined(shape, parts, |prefix, runs| {
            WitnessAssignment::join_parts_into(prefix, runs, aux_out)
        })
    }

    /// The runs of `parts` synthesized on rayon's threads, then `join`ed
    /// with the shared beginning; each step's time logged.
    fn witness_runs_joined<T>(
        &self,
        shape: &CircuitShape,
        parts: usize,
        join: impl FnOnce(WitnessAssignment, Vec<WitnessAssignment>) -> Result<T, groth16_gpu::Error>,
    ) -> Result<T, groth16_gpu::Error> {
        let started = std::time::Instant::now();
        let prefix = self.prefix_witness()?;
        let prefix_done = started.elapsed();
        let runs = self.run_count(parts);
        let witnesses = (0..runs)
            .into_par_iter()
            .map(|run| self.run_witness(shape, parts, run))
            .collect::<Result<Vec<_>, groth16_gpu::Error>>()?;
        let parts_done = started.elapsed();
        let joined = join(prefix, witnesses);
        log::info!(
            "witness in {runs} runs: prefix {prefix_done:.2?}, runs {:.2?}, join {:.2?}",
            parts_done - prefix_done,
            started.elapsed() - parts_done
        );
        joined
    }

    /// The witness of the partition's shared beginning alone: what every
    /// run begins with.
    pub fn prefix_witness(&self) -> Result<WitnessAssignment, groth16_gpu::Error> {
        let mut prefix = WitnessAssignment::counting();
        self.synthesize_challenges(&mut prefix, &[])?;
        Ok(prefix)
    }

    /// Runs the partition's challenges make when cut into `parts` (at least
    /// one: a partition without challenges is its shared beginning).
    pub fn run_count(&self, parts: usize) -> usize {
        self.proofs.len().div_ceil(self.run_length(parts)).max(1)
    }

    /// Run `run` of `run_count(parts)`: the shared beginning, then the
    /// run's challenges, as [`WitnessAssignment::join_parts`] takes it.
    pub fn run_witness(
        &self,
        shape: &CircuitShape,
        parts: usize,
        run: usize,
    ) -> Result<WitnessAssignment, groth16_gpu::Error> {
        let length = self.run_length(parts);
        let first = (run * length).min(self.proofs.len());
        let proofs = &self.proofs[first..(first + length).min(self.proofs.len())];
        // Room for the run's share and the shared beginning's few values:
        // a vector that has to grow would hold twice the memory meanwhile.
        let aux_per_run = shape.num_aux().div_ceil(self.run_count(parts)) + 4096;
        let mut witness =
            WitnessAssignment::counting_with_capacity(shape.num_inputs(), aux_per_run);
        self.synthesize_challenges(&mut witness, proofs)?;
        Ok(witness)
    }

    /// Challenges a run takes when the partition is cut into `parts` runs.
    fn run_length(&self, parts: usize) -> usize {
        self.proofs
            .len()
            .div_ceil(parts.clamp(1, self.proofs.len().max(1)))
            .max(1)
    }

    /// The partition's shape recorded in `parts` runs of its challenges on
    /// separate threads, joined (`CircuitShape::join_parts`): what one
    /// recording of the whole partition makes, in a fraction of the time.
    pub fn shape_in_parts(&self, parts: usize) -> Result<CircuitShape, groth16_gpu::Error> {
        let started = std::time::Instant::now();
        let prefix = CircuitShape::record(ChallengeRun {
            partition: self,
            proofs: &[],
        })?;
        let shapes = self
            .proofs
            .par_chunks(self.run_length(parts))
            .map(|proofs| {
                CircuitShape::record(ChallengeRun {
                    partition: self,
                    proofs,
                })
            })
            .collect::<Result<Vec<_>, groth16_gpu::Error>>()?;
        let runs_done = started.elapsed();
        let joined = CircuitShape::join_parts(&prefix, &shapes);
        log::info!(
            "shape in {} runs: runs {runs_done:.2?}, join {:.2?}",
            shapes.len(),
            started.elapsed() - runs_done
        );
        joined
    }
}

/// Some of a partition's challenges after its shared beginning, as a circuit.
struct ChallengeRun<'a> {
    partition: &'a PorepParts,
    proofs: &'a [stacked::Proof<PorepTree, Sha256Hasher>],
}

impl Circuit<Scalar> for ChallengeRun<'_> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.partition.synthesize_challenges(cs, self.proofs)
    }
}

impl Circuit<Scalar> for PorepParts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.synthesize_challenges(cs, &self.proofs)
    }
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
