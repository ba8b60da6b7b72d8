//! NI-PoRep (filecoin-proofs 19.1's `NonInteractivePoRep` feature, API
//! 1.2) through our `seal_commit_phase2` on a 2 KiB sector sealed by
//! filecoin-proofs, on the CPU: the partition proofs aggregated by
//! filecoin-proofs (SnarkPack, `AggregateVersion::V2`) and accepted by its
//! `verify_seal` (which verifies NI-PoRep's aggregate), refused for another
//! sector or prover id. The key is the interactive 2 KiB key (the same
//! circuit: 13 partitions of 2 challenges), and the aggregation SRS a fake
//! one from bellperson, both made once in the tests' parameter cache.
//! Slow on the CPU: 13 partition proofs.
#![cfg(feature = "filecoin")]

#[path = "common/filecoin_api.rs"]
mod common;

use bellperson::groth16::aggregate::AggregateProof;
use blstrs::Bls12;
use common::{
    assert_seal_verifies_as_sealed_only, ensure_aggregation_srs, porep_config, sealed_with_key,
    Tree,
};
use filecoin_proofs::{constants::get_porep_non_interactive_partitions, parameters::public_params};
use groth16_gpu::filecoin::{self, cache_identifier};
use groth16_gpu::ProverPool;
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

type Stacked<'a> = StackedDrg<'a, Tree, filecoin_proofs::DefaultPieceHasher>;
type Circuit = StackedCircuit<Tree, filecoin_proofs::DefaultPieceHasher>;
type Compound = StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher>;

/// The parameter cache identifier of `config`'s PoRep circuit.
fn porep_circuit_id(config: &filecoin_proofs::PoRepConfig) -> String {
    let vanilla = public_params::<Tree>(config).expect("porep public params");
    cache_identifier::<Stacked<'_>, Circuit, Compound>(&vanilla)
}

#[test]
fn ni_porep_c2_aggregate_verifies_and_changed_inputs_are_refused() {
    let config = porep_config(ApiVersion::V1_2_0, vec![ApiFeature::NonInteractivePoRep]);
    let partitions = usize::from(config.partitions);
    assert_eq!(
        config.partitions.0,
        get_porep_non_interactive_partitions(common::SECTOR_SIZE)
    );
    // NI-PoRep's partitions are the interactive circuit (2 challenges
    // each), so they share its key.
    let interactive = porep_config(ApiVersion::V1_2_0, vec![]);
    assert_eq!(porep_circuit_id(&config), porep_circuit_id(&interactive));
    ensure_aggregation_srs(partitions);
    let sector = sealed_with_key(&config);
    assert_eq!(sector.phase1.vanilla_proofs.len(), partitions);

    let pool = ProverPool::cpu(1).expect("cpu pool");
    let started = std::time::Instant::now();
    let output = filecoin::seal_commit_phase2(
        &pool,
        &config,
        common::copy_phase1(&sector.phase1),
        sector.prover_id,
        sector.sector_id,
    )
    .expect("our NI-PoRep C2");
    eprintln!(
        "NI-PoRep C2 ({partitions} partitions, aggregated) in {:.1?}",
        started.elapsed()
    );

    // One aggregate of the partitions padded to a power of two, not the
    // partitions' 192 bytes each.
    let aggregate = AggregateProof::<Bls12>::read(&output.proof[..]).expect("an aggregate proof");
    assert_eq!(
        aggregate.tmipp.gipa.nproofs as usize,
        partitions.next_power_of_two()
    );
    assert_ne!(output.proof.len(), 192 * partitions);

    // (NI-PoRep's challenges come from the replica id and comm_r, not
    // from the seed, so a changed seed is not refused.)
    let last = output.proof.len() - 1;
    assert_seal_verifies_as_sealed_only(&config, &sector, &output.proof, last);
}
