//! Filecoin's calls (feature `filecoin`) through filecoin-proofs 19.1's own
//! pipeline on 2 KiB sectors, on the CPU: sectors sealed by filecoin-proofs
//! (pre-commit 1 and 2, commit 1), our C2 (interactive and Synthetic
//! PoRep), WindowPoSt, WinningPoSt and SnapDeals proofs that
//! filecoin-proofs' verifiers accept, and refuse for changed inputs; bad
//! inputs, and a circuit that panics while it is synthesized, are errors
//! that name what is wrong, and the pool goes on serving. Keys come from
//! our generator, placed where filecoin-proofs looks (no download).
#![cfg(feature = "filecoin")]

#[path = "common/filecoin_api.rs"]
mod common;
#[path = "common/filecoin_post.rs"]
mod post;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use blstrs::Scalar;
use ff::Field;

use common::{
    assert_seal_verifies_as_sealed_only, ensure_params, porep_config, seal_sector, sealed_with_key,
    test_rng, SealedSector, Tree,
};
use filecoin_proofs::{
    add_piece, encode_into, generate_partition_proofs, generate_piece_commitment,
    generate_winning_post_sector_challenge, verify_empty_sector_update_proof, verify_window_post,
    verify_winning_post, PoRepConfig, PoStType, PublicReplicaInfo, SealCommitOutput,
    SealCommitPhase1Output, SectorUpdateConfig, UnpaddedBytesAmount,
};
use groth16_gpu::filecoin::{self, FilecoinError, PartitionRandomness};
use groth16_gpu::pool::PoolError;
use groth16_gpu::{Error, ProverPool};
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};
use storage_proofs_core::sector::SectorId;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

const API: ApiVersion = ApiVersion::V1_2_0;

use post::{
    bellperson_post, copy_post, ensure_post_params, post_config, post_vanilla_proofs,
    public_replicas, sealed_for_post,
};

/// One CPU pool for the whole binary, as a node would keep one.
fn pool() -> &'static ProverPool {
    static POOL: OnceLock<ProverPool> = OnceLock::new();
    POOL.get_or_init(|| ProverPool::cpu(1).expect("cpu pool"))
}

/// Our C2 on the shared pool of `phase1`, as sector `sector` of its prover.
fn our_c2(
    config: &PoRepConfig,
    sector: &SealedSector,
    phase1: SealCommitPhase1Output<Tree>,
) -> Result<SealCommitOutput, Error> {
    filecoin::seal_commit_phase2(pool(), config, phase1, sector.prover_id, sector.sector_id)
}

/// Seals a sector with `features` at [`API`], proves its C2 with ours,
/// and asserts `verify_seal` accepts it as sealed only.
fn assert_c2_verifies_as_sealed_only(features: Vec<ApiFeature>) {
    let config = porep_config(API, features);
    let sector = sealed_with_key(&config);

    let started = std::time::Instant::now();
    let output = our_c2(&config, &sector, common::copy_phase1(&sector.phase1)).expect("our C2");
    let features = &config.api_features;
    eprintln!("C2 {features:?} in {:.1?}", started.elapsed());
    assert_eq!(output.proof.len(), 192 * usize::from(config.partitions));
    assert_seal_verifies_as_sealed_only(&config, &sector, &output.proof, 10);
}

#[test]
fn porep_c2_verifies_and_changed_inputs_are_refused() {
    assert_c2_verifies_as_sealed_only(vec![]);
}

#[test]
fn synthetic_porep_c2_verifies_and_changed_inputs_are_refused() {
    // Commit 1 picks its challenges' proofs out of those stored by
    // filecoin-proofs' `generate_synth_proofs` (see `seal_sector`).
    assert_c2_verifies_as_sealed_only(vec![ApiFeature::SyntheticPoRep]);
}

#[test]
fn window_post_verifies_and_changed_inputs_are_refused() {
    let config = post_config(PoStType::Window);
    ensure_post_params(&config);
    let mut rng = test_rng();
    let sectors = sealed_for_post(2, &mut rng);
    let prover_id = sectors[0].prover_id;
    let randomness = [7u8; 32];
    let vanilla = post_vanilla_proofs(
        &config,
        &randomness,
        prover_id,
        &sectors.iter().collect::<Vec<_>>(),
    );

    let proof = filecoin::generate_window_post_with_vanilla(
        pool(),
        &config,
        &randomness,
        prover_id,
        vanilla,
    )
    .expect("our WindowPoSt");
    assert_eq!(proof.len(), 192);
    let replicas = public_replicas(&sectors);
    let verifies = |randomness: &[u8; 32], replicas: &BTreeMap<_, _>, prover_id| {
        verify_window_post::<Tree>(&config, randomness, replicas, prover_id, &proof)
            .map_err(|e| eprintln!("verify_window_post: {e:#}"))
            .unwrap_or(false)
    };
    assert!(verifies(&randomness, &replicas, prover_id));
    assert!(!verifies(&[8u8; 32], &replicas, prover_id));
    // (The PoSt circuits take no prover id among their public inputs.)
    let mut other_sectors = replicas.clone();
    let (&first, info) = replicas.iter().next().unwrap();
    other_sectors.remove(&first);
    other_sectors.insert(SectorId::from(u64::from(first) ^ 1), info.clone());
    assert!(!verifies(&randomness, &other_sectors, prover_id));
}

#[test]
fn winning_post_verifies_is_bellpersons_bytes_and_changed_inputs_are_refused() {
    let config = post_config(PoStType::Winning);
    ensure_post_params(&config);
    let mut rng = test_rng();
    let sectors = sealed_for_post(3, &mut rng);
    let prover_id = sectors[0].prover_id;
    let randomness = [9u8; 32];
    // The sector filecoin-proofs picks for this randomness out of three.
    let picked =
        generate_winning_post_sector_challenge::<Tree>(&config, &randomness, 3, prover_id).unwrap();
    let chosen = &sectors[picked[0] as usize];
    let vanilla = post_vanilla_proofs(&config, &randomness, prover_id, &[chosen]);

    // Our proof for fixed r and s, and bellperson's for the same circuit
    // (built as filecoin-proofs builds it) and the same key file.
    let r_s = PartitionRandomness {
        r: vec![Scalar::random(&mut rng)],
        s: vec![Scalar::random(&mut rng)],
    };
    let ours = filecoin::generate_post_with_vanilla_and_randomness(
        pool(),
        &config,
        &randomness,
        prover_id,
        copy_post(&vanilla),
        r_s.clone(),
    )
    .expect("our WinningPoSt");
    let theirs = bellperson_post(&config, &randomness, prover_id, &vanilla, &r_s);
    assert_eq!(
        ours, theirs,
        "our WinningPoSt differs from bellperson's for the same r and s"
    );

    let proof = filecoin::generate_winning_post_with_vanilla(
        pool(),
        &config,
        &randomness,
        prover_id,
        vanilla,
    )
    .expect("our WinningPoSt");
    let replicas = vec![(
        chosen.sector_id,
        PublicReplicaInfo::new(chosen.pre_commit.comm_r).unwrap(),
    )];
    let verifies =
        |randomness: &[u8; 32], replicas: &[(SectorId, PublicReplicaInfo)], prover_id| {
            verify_winning_post::<Tree>(&config, randomness, replicas, prover_id, &proof)
                .map_err(|e| eprintln!("verify_winning_post: {e:#}"))
                .unwrap_or(false)
        };
    assert!(verifies(&randomness, &replicas, prover_id));
    // (The PoSt circuits take no prover id among their public inputs.)
    let other_sector = vec![(
        SectorId::from(u64::from(chosen.sector_id) ^ 1),
        replicas[0].1.clone(),
    )];
    assert!(!verifies(&randomness, &other_sector, prover_id));
}

#[test]
fn snap_deals_update_verifies_and_changed_inputs_are_refused() {
    let porep = porep_config(API, vec![]);
    let update_params = storage_proofs_update::PublicParams::from_sector_size(common::SECTOR_SIZE);
    ensure_params::<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
        EmptySectorUpdateCompound<Tree>,
    >(&update_params);
    let mut rng = test_rng();
    let sector = seal_sector(&porep, &mut rng);

    // New data encoded into the sealed sector, by filecoin-proofs.
    let piece_size = UnpaddedBytesAmount::from(porep.sector_size);
    let mut data = vec![0u8; u64::from(piece_size) as usize];
    rand_core::RngCore::fill_bytes(&mut rng, &mut data);
    let piece_info = generate_piece_commitment(&data[..], piece_size).unwrap();
    let staged = tempfile::NamedTempFile::new().unwrap();
    add_piece(&data[..], staged.as_file(), piece_size, &[]).unwrap();
    let new_replica = tempfile::NamedTempFile::new().unwrap();
    new_replica.as_file().set_len(common::SECTOR_SIZE).unwrap();
    let new_cache = tempfile::tempdir().unwrap();
    let config = SectorUpdateConfig::from_porep_config(&porep);
    let encoded = encode_into::<Tree>(
        &config,
        new_replica.path(),
        new_cache.path(),
        sector.replica.path(),
        sector.cache_dir.path(),
        staged.path(),
        &[piece_info],
    )
    .expect("encode");
    let comm_r_old = sector.pre_commit.comm_r;
    let vanilla = generate_partition_proofs::<Tree>(
        config,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        sector.replica.path(),
        sector.cache_dir.path(),
        new_replica.path(),
        new_cache.path(),
    )
    .expect("vanilla update proofs");

    let proof = filecoin::generate_empty_sector_update_proof_with_vanilla(
        pool(),
        &porep,
        vanilla,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
    )
    .expect("our SnapDeals proof");
    let verifies = |comm_r_old, comm_r_new, comm_d_new| {
        verify_empty_sector_update_proof::<Tree>(
            &porep, &proof.0, comm_r_old, comm_r_new, comm_d_new,
        )
        .unwrap_or(false)
    };
    assert!(verifies(comm_r_old, encoded.comm_r_new, encoded.comm_d_new));
    assert!(!verifies(
        encoded.comm_r_new,
        encoded.comm_r_new,
        encoded.comm_d_new
    ));
    assert!(!verifies(comm_r_old, comm_r_old, encoded.comm_d_new));
    assert!(!verifies(
        comm_r_old,
        encoded.comm_r_new,
        sector.pre_commit.comm_d
    ));
}

#[test]
fn a_panicking_circuit_is_an_error_naming_the_panic_and_the_pool_goes_on() {
    let config = porep_config(API, vec![]);
    let sector = sealed_with_key(&config);

    // storage-proofs' vanilla verifier zips a challenge's expander parent
    // column proofs with the graph's parents, so without any of them the
    // proof still verifies (our check before proving lets it through);
    // the circuit asserts it has some, and panics while synthesizing.
    let mut phase1 = common::copy_phase1(&sector.phase1);
    phase1.vanilla_proofs[0][0]
        .replica_column_proofs
        .exp_parents
        .clear();
    match our_c2(&config, &sector, phase1) {
        Err(Error::Pool(PoolError::Job { index: 0, source })) => match *source {
            Error::CircuitPanicked(message) => {
                eprintln!("as expected: {message}");
                assert!(
                    message.contains("exp_parents_proofs.is_empty()"),
                    "not the circuit's assertion: {message}"
                );
            }
            other => panic!("expected the circuit's panic, got {other:?}"),
        },
        other => panic!("expected partition 0's caught panic, got {other:?}"),
    }

    // The same pool proves the same sector's C2 next.
    let output = our_c2(&config, &sector, common::copy_phase1(&sector.phase1))
        .expect("a good C2 after the panic");
    assert_seal_verifies_as_sealed_only(&config, &sector, &output.proof, 10);
}

/// The FilecoinError inside a call's error, if that is what it is.
fn filecoin_error(result: Result<impl std::fmt::Debug, Error>) -> FilecoinError {
    match result {
        Err(Error::Filecoin(error)) => {
            eprintln!("as expected: {error}");
            error
        }
        other => panic!("expected a FilecoinError, got {other:?}"),
    }
}

#[test]
fn bad_inputs_are_errors_that_name_them_and_the_pool_goes_on() {
    let config = porep_config(API, vec![]);
    let mut rng = test_rng();
    let sector = seal_sector(&config, &mut rng);
    let c2 = |config: &filecoin_proofs::PoRepConfig, phase1, sector_id| {
        filecoin::seal_commit_phase2::<Tree>(pool(), config, phase1, sector.prover_id, sector_id)
    };

    // C1 files: truncated, and whole JSON whose proofs are not proofs.
    let registered = filecoin::RegisteredSealProof::of(common::SECTOR_SIZE, 3).unwrap();
    let json = filecoin::C1Output::from_phase1(registered, &sector.phase1)
        .unwrap()
        .to_json();
    let whole = filecoin::C1Output::from_json(&json).expect("our own C1 file");
    assert_eq!(whole.registered_proof.sector_size, common::SECTOR_SIZE);
    assert!(whole.phase1_output::<Tree>().is_ok());
    let truncated = filecoin::C1Output::from_json(&json[..json.len() / 2]);
    assert!(matches!(
        filecoin_error(truncated),
        FilecoinError::MalformedC1(_)
    ));
    let corrupted = String::from_utf8(json.clone()).unwrap().replacen(
        "\"comm_d_proofs\"",
        "\"comm_d_proofz\"",
        1,
    );
    let parsed = filecoin::C1Output::from_json(corrupted.as_bytes()).unwrap();
    assert!(matches!(
        filecoin_error(parsed.phase1_output::<Tree>()),
        FilecoinError::MalformedC1(_)
    ));

    // A 2 KiB sector's C1 output with an 8 MiB configuration (the same tree shape).
    let mut porep_8mib = config.clone();
    porep_8mib.sector_size = filecoin_proofs::SECTOR_SIZE_8_MIB.into();
    let error = filecoin_error(c2(
        &porep_8mib,
        common::copy_phase1(&sector.phase1),
        sector.sector_id,
    ));
    assert!(matches!(
        error,
        FilecoinError::SectorSizeMismatch { expected, found: common::SECTOR_SIZE } if expected == filecoin_proofs::SECTOR_SIZE_8_MIB
    ));

    // Another sector id than the one sealed: the replica id does not match.
    let other_sector = SectorId::from(u64::from(sector.sector_id) + 1);
    let error = filecoin_error(c2(
        &config,
        common::copy_phase1(&sector.phase1),
        other_sector,
    ));
    assert!(matches!(error, FilecoinError::InvalidInput(ref m) if m.contains("replica id")));

    // Vanilla proofs that do not match their public inputs: another seed, another comm_r.
    let mut phase1 = common::copy_phase1(&sector.phase1);
    phase1.seed[0] ^= 1;
    let error = filecoin_error(c2(&config, phase1, sector.sector_id));
    assert!(matches!(error, FilecoinError::VanillaProofInvalid { .. }));
    let mut phase1 = common::copy_phase1(&sector.phase1);
    phase1.comm_r = phase1.comm_d;
    let error = filecoin_error(c2(&config, phase1, sector.sector_id));
    assert!(matches!(error, FilecoinError::VanillaProofInvalid { .. }));

    // PoSt vanilla proofs for other randomness than the call's.
    let post = post_config(PoStType::Window);
    ensure_post_params(&post);
    let sectors = sealed_for_post(2, &mut rng);
    let refs: Vec<&SealedSector> = sectors.iter().collect();
    let prover_id = sectors[0].prover_id;
    let vanilla = post_vanilla_proofs(&post, &[1u8; 32], prover_id, &refs);
    let error = filecoin_error(filecoin::generate_window_post_with_vanilla(
        pool(),
        &post,
        &[2u8; 32],
        prover_id,
        copy_post(&vanilla),
    ));
    assert!(matches!(error, FilecoinError::VanillaProofInvalid { .. }));

    // A circuit with no parameters in the cache (another challenge count).
    let mut fewer = post_config(PoStType::Window);
    fewer.challenge_count = 5;
    let other = post_vanilla_proofs(&fewer, &[1u8; 32], prover_id, &refs);
    let error = filecoin_error(filecoin::generate_window_post_with_vanilla(
        pool(),
        &fewer,
        &[1u8; 32],
        prover_id,
        other,
    ));
    assert!(matches!(error, FilecoinError::MissingParameters { .. }));

    // A configuration of zero sectors a partition: an error, not a panic.
    let mut zero = post_config(PoStType::Window);
    zero.sector_count = 0;
    let result = filecoin::generate_window_post_with_vanilla(
        pool(),
        &zero,
        &[1u8; 32],
        prover_id,
        copy_post(&vanilla),
    );
    match result {
        Err(error) => eprintln!("as expected: {error}"),
        Ok(_) => panic!("a PoSt over chunks of zero sectors was proved"),
    }

    // The same pool goes on proving.
    let proof =
        filecoin::generate_window_post_with_vanilla(pool(), &post, &[1u8; 32], prover_id, vanilla)
            .expect("a good call after the bad ones");
    let replicas = public_replicas(&sectors);
    assert!(verify_window_post::<Tree>(&post, &[1u8; 32], &replicas, prover_id, &proof).unwrap());
}
