//! Helpers for tests/filecoin_api.rs and examples/filecoin_compare.rs: a
//! parameter cache of keys from our own generator where filecoin-proofs
//! looks for them (no download), and 2 KiB sectors sealed through
//! filecoin-proofs' own calls.
#![allow(dead_code)]

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use bellpepper_core::Circuit;
use bellperson::groth16::aggregate::setup_fake_srs;
use blstrs::{Bls12, Scalar};
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{
    add_piece, clear_cache, generate_piece_commitment, generate_synth_proofs, seal_commit_phase1,
    seal_pre_commit_phase1, seal_pre_commit_phase2, verify_seal, DefaultPieceHasher, PieceInfo,
    PoRepConfig, SealCommitPhase1Output, SealPreCommitOutput, SectorShape2KiB, UnpaddedBytesAmount,
};
use groth16_gpu::filecoin::{cache_identifier, params_path};
use groth16_gpu::generate_parameters_for_shape_random;
use groth16_gpu::synthesis::CircuitShape;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::{parameter_cache_srs_key_path, ParameterSetMetadata};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};
use tempfile::{tempdir, NamedTempFile, TempDir};

pub type Tree = SectorShape2KiB;
pub const SECTOR_SIZE: u64 = filecoin_proofs::SECTOR_SIZE_2_KIB;

/// The parameter cache of these tests (and of examples/filecoin_compare.rs
/// unless `FIL_PROOFS_PARAMETER_CACHE` names one): `<target>/tmp/filecoin-parameters`,
/// so keys made once serve later runs. filecoin-proofs reads
/// `FIL_PROOFS_PARAMETER_CACHE` once, at its first use, so every helper
/// calls this first.
pub fn parameter_cache() -> &'static Path {
    use_parameter_cache(default_parameter_cache)
}

/// Points filecoin-proofs at the folder `dir` gives, unless a folder was
/// chosen already (the first call wins), and returns the one in use.
pub fn use_parameter_cache(dir: impl FnOnce() -> PathBuf) -> &'static Path {
    static CHOSEN: OnceLock<PathBuf> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let dir = dir();
        std::fs::create_dir_all(&dir).expect("parameter cache folder");
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        let _ = env_logger::builder().is_test(true).try_init();
        dir
    })
}

/// `<target>/tmp/filecoin-parameters`: cargo's temporary folder for
/// integration tests, or for an example (`<target>/<profile>/examples/NAME`,
/// where cargo gives no such folder) the same one found from its place.
pub fn default_parameter_cache() -> PathBuf {
    let tmp = match option_env!("CARGO_TARGET_TMPDIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().expect("the executable's path");
            let target = exe
                .ancestors()
                .nth(3)
                .expect("not in <target>/<profile>/examples/: set FIL_PROOFS_PARAMETER_CACHE");
            target.join("tmp")
        }
    };
    tmp.join("filecoin-parameters")
}

/// Makes sure the `.params` file of `P`'s circuit for `vanilla_params`
/// exists where filecoin-proofs looks: a key from our generator (random
/// trapdoor) for the blank circuit's shape. filecoin-proofs derives the
/// `.vk` from it when it first verifies.
pub fn ensure_params<'a, S, C, P>(vanilla_params: &S::PublicParams)
where
    S: ProofScheme<'a>,
    C: Circuit<Scalar> + CircuitComponent + Send,
    P: CompoundProof<'a, S, C>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
{
    // One key generation at a time (tests run on threads side by side).
    static GENERATING: Mutex<()> = Mutex::new(());
    parameter_cache();
    let id = cache_identifier::<S, C, P>(vanilla_params);
    let path = params_path(&id);
    let _one = GENERATING.lock().unwrap_or_else(|e| e.into_inner());
    if path.exists() {
        return;
    }
    let started = std::time::Instant::now();
    let shape = CircuitShape::record(P::blank_circuit(vanilla_params)).expect("blank circuit");
    let mut rng = ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
    let key = generate_parameters_for_shape_random(&shape, &mut rng).expect("keys");
    write_then_rename(&path, |partial| {
        key.write_file(partial).expect("write the parameters")
    });
    eprintln!(
        "{id}: {} constraints, keys in {:.1?}",
        shape.num_constraints(),
        started.elapsed()
    );
}

/// Writes the file at `path` through `write` on a `.partial` beside it,
/// then renames it: a reader never sees half a file.
fn write_then_rename(path: &Path, write: impl FnOnce(&Path)) {
    let partial = path.with_extension("partial");
    write(&partial);
    std::fs::rename(&partial, path).expect("rename the finished file");
}

/// Makes sure the aggregation SRS filecoin-proofs reads (the "inner
/// product" SRS, `v28-fil-inner-product-v1.srs`, one file for every
/// aggregation size) is in the parameter cache and serves `proofs`
/// proofs: a fake one (random trapdoor) from bellperson's
/// `setup_fake_srs`, written with its `write`, which is what
/// storage-proofs' `get_inner_product` writes there when given a
/// generator. filecoin-proofs reads it with `GenericSRS::read_mmap`
/// (its first 32,769 points a vector) and checks its digest only under
/// `verify_production_params`, off by default.
pub fn ensure_aggregation_srs(proofs: usize) {
    static WRITING: Mutex<()> = Mutex::new(());
    parameter_cache();
    let path = parameter_cache_srs_key_path("", proofs);
    // filecoin-proofs pads the proofs to a power of two; bellperson
    // specializes an SRS of 2n points a vector for n proofs.
    let padded = proofs.next_power_of_two().max(2);
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    if srs_points(&path) >= 2 * padded {
        return;
    }
    let started = std::time::Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
    let srs = setup_fake_srs::<Bls12, _>(&mut rng, padded);
    write_then_rename(&path, |partial| {
        let mut file = std::io::BufWriter::new(std::fs::File::create(partial).unwrap());
        srs.write(&mut file).expect("write the SRS");
        file.flush().expect("write the SRS");
    });
    eprintln!(
        "{}: fake SRS for {padded} proofs in {:.1?}",
        path.display(),
        started.elapsed()
    );
}

/// Points in the first vector of the SRS file at `path` (its big-endian
/// u32 count), 0 where there is no file.
fn srs_points(path: &Path) -> usize {
    let mut count = [0u8; 4];
    match std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut count)) {
        Ok(()) => u32::from_be_bytes(count) as usize,
        Err(_) => 0,
    }
}

/// Makes sure the 2 KiB PoRep key of `config` exists (see [`ensure_params`]).
pub fn ensure_porep_params(config: &PoRepConfig) {
    let vanilla = public_params::<Tree>(config).expect("porep public params");
    ensure_params::<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        StackedCompound<Tree, DefaultPieceHasher>,
    >(&vanilla);
}

/// A 2 KiB sector sealed with `config` (see [`seal_sector`]), its PoRep
/// key in the cache (see [`ensure_porep_params`]).
pub fn sealed_with_key(config: &PoRepConfig) -> SealedSector {
    ensure_porep_params(config);
    seal_sector(config, &mut test_rng())
}

/// Whether filecoin-proofs' `verify_seal` accepts `proof` for sector `s`
/// sealed by `prover_id` as `sector_id` (an error is a refusal).
pub fn seal_verifies(
    config: &PoRepConfig,
    s: &SealedSector,
    prover_id: [u8; 32],
    sector_id: SectorId,
    proof: &[u8],
) -> bool {
    verify_seal::<Tree>(
        config,
        s.pre_commit.comm_r,
        s.pre_commit.comm_d,
        prover_id,
        sector_id,
        s.ticket,
        s.seed,
        proof,
    )
    .unwrap_or(false)
}

/// Asserts that filecoin-proofs' `verify_seal` accepts `proof` for
/// sector `s` as sealed, and refuses it for another sector id, another
/// prover id, and with its byte `changed_byte` flipped.
pub fn assert_seal_verifies_as_sealed_only(
    config: &PoRepConfig,
    s: &SealedSector,
    proof: &[u8],
    changed_byte: usize,
) {
    let verifies =
        |prover_id, sector_id, proof: &[u8]| seal_verifies(config, s, prover_id, sector_id, proof);
    assert!(verifies(s.prover_id, s.sector_id, proof), "not accepted");
    let other_sector = SectorId::from(u64::from(s.sector_id) ^ 1);
    assert!(
        !verifies(s.prover_id, other_sector, proof),
        "another sector id accepted"
    );
    let mut other_prover = s.prover_id;
    other_prover[0] ^= 1;
    assert!(
        !verifies(other_prover, s.sector_id, proof),
        "another prover id accepted"
    );
    let mut changed = proof.to_vec();
    changed[changed_byte] ^= 1;
    assert!(
        !verifies(s.prover_id, s.sector_id, &changed),
        "a changed proof accepted"
    );
}

/// The PoRep configuration of a 2 KiB sector at `api_version` with
/// `features` (none: interactive PoRep).
pub fn porep_config(api_version: ApiVersion, features: Vec<ApiFeature>) -> PoRepConfig {
    let mut porep_id = [0u8; 32];
    porep_id[0] = 5; // any id: the tests make their own keys
    PoRepConfig::new_groth16_with_features(SECTOR_SIZE, porep_id, api_version, features)
        .expect("porep config")
}

/// A 2 KiB sector sealed by filecoin-proofs: its files and every output up
/// to commit phase 1.
pub struct SealedSector {
    pub cache_dir: TempDir,
    pub replica: NamedTempFile,
    pub prover_id: [u8; 32],
    pub sector_id: SectorId,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
    pub piece_infos: Vec<PieceInfo>,
    pub pre_commit: SealPreCommitOutput,
    pub phase1: SealCommitPhase1Output<Tree>,
}

/// Seals a sector of random data: filecoin-proofs' piece commitment,
/// add_piece, pre-commit 1 and 2, commit 1. With Synthetic PoRep, between
/// pre-commit 2 and commit 1, its synthetic vanilla proofs are made and the
/// labels and trees C and D cleared, as filecoin-proofs' own tests do:
/// commit 1 then picks among the stored proofs.
pub fn seal_sector(config: &PoRepConfig, rng: &mut impl RngCore) -> SealedSector {
    parameter_cache();
    let piece_size = UnpaddedBytesAmount::from(config.sector_size);
    let mut data = vec![0u8; u64::from(piece_size) as usize];
    rng.fill_bytes(&mut data);
    let mut piece = NamedTempFile::new().unwrap();
    piece.write_all(&data).unwrap();
    piece.rewind().unwrap();
    let piece_info = generate_piece_commitment(piece.as_file_mut(), piece_size).unwrap();
    piece.rewind().unwrap();
    let mut staged = NamedTempFile::new().unwrap();
    add_piece(piece.as_file_mut(), &mut staged, piece_size, &[]).unwrap();
    let piece_infos = vec![piece_info];

    let cache_dir = tempdir().unwrap();
    let replica = NamedTempFile::new().unwrap();
    let mut prover_id = [0u8; 32];
    rng.fill_bytes(&mut prover_id[..31]); // a field element
    let sector_id = SectorId::from(rng.next_u64());
    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);

    let pc1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        config,
        cache_dir.path(),
        staged.path(),
        replica.path(),
        prover_id,
        sector_id,
        ticket,
        &piece_infos,
    )
    .expect("pre-commit 1");
    let pre_commit = seal_pre_commit_phase2(config, pc1, cache_dir.path(), replica.path())
        .expect("pre-commit 2");
    if config.feature_enabled(ApiFeature::SyntheticPoRep) {
        generate_synth_proofs::<_, Tree>(
            config,
            cache_dir.path(),
            replica.path(),
            prover_id,
            sector_id,
            ticket,
            pre_commit.clone(),
            &piece_infos,
        )
        .expect("synthetic proofs");
        clear_cache(cache_dir.path()).expect("clear the labels and trees C and D");
    }
    let phase1 = seal_commit_phase1::<_, Tree>(
        config,
        cache_dir.path(),
        replica.path(),
        prover_id,
        sector_id,
        ticket,
        seed,
        pre_commit.clone(),
        &piece_infos,
    )
    .expect("commit 1");
    SealedSector {
        cache_dir,
        replica,
        prover_id,
        sector_id,
        ticket,
        seed,
        piece_infos,
        pre_commit,
        phase1,
    }
}

/// A deterministic generator for a test, its seed printed.
pub fn test_rng() -> ChaCha20Rng {
    let seed = rand_core::OsRng.next_u64();
    eprintln!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// A copy of a C1 output (the type is not `Clone`): through its JSON, as
/// it travels between processes.
pub fn copy_phase1(output: &SealCommitPhase1Output<Tree>) -> SealCommitPhase1Output<Tree> {
    serde_json::from_value(serde_json::to_value(output).unwrap()).unwrap()
}
