//! Synthesis of Filecoin PoRep partitions (storage-proofs-porep 19.1, a
//! 2 KiB sector, 2 layers), ours against bellperson's in the same group:
//! one partition, and ten in parallel over the cores.
//!
//! Default: 3 challenges a partition (about 4 million constraints, the
//! issue's figure). Quick runs: G16_BENCH_POREP_CHALLENGES=1 (1.3 million)
//! and G16_BENCH_POREP_PARTITIONS=N for the parallel case.
//!
//! bellperson's synthesis is timed through an equivalent of its private
//! `ProvingAssignment` (tests/common/bellperson_synthesis.rs); before timing,
//! the bench checks that it computes what ours does.

#[path = "../tests/common/bellperson_synthesis.rs"]
mod bellperson_synthesis;
#[path = "../tests/common/env.rs"]
mod env;
#[path = "../tests/common/filecoin.rs"]
mod filecoin;

use bellpepper_core::Circuit;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use env::env_or;
use filecoin::{PorepCircuit, PorepConfig};
use groth16_gpu::synthesis::{
    synthesize, synthesize_batch, Assignment, CircuitShape, WitnessAssignment,
};
use rand_core::OsRng;
use rayon::prelude::*;

const MIB: f64 = (1 << 20) as f64;

/// Host bytes of one synthesized partition: witness, A/B/C values, densities.
fn assignment_bytes(a: &Assignment) -> usize {
    let scalars = a.input.len() + a.aux.len() + a.a.len() + a.b.len() + a.c.len();
    let density_bits = a.a_aux_density.len() + a.b_input_density.len() + a.b_aux_density.len();
    scalars * 32 + density_bits / 8
}

/// Bytes of the recorded matrices, shared by every partition: a 64-bit row
/// start per row, a 32-bit column and coefficient slot per entry.
fn shape_bytes(shape: &CircuitShape) -> usize {
    shape
        .matrices()
        .iter()
        .map(|m| m.num_rows() * 8 + m.num_entries() * 8)
        .sum()
}

/// The stand-in for bellperson computes what our synthesis does.
fn check_same_work(ours: &Assignment, circuit: PorepCircuit) {
    let theirs = bellperson_synthesis::synthesize(circuit).expect("bellperson-style synthesis");
    assert!(
        theirs.input == ours.input && theirs.aux == ours.aux,
        "witness"
    );
    assert!(
        theirs.a == ours.a && theirs.b == ours.b && theirs.c == ours.c,
        "A/B/C"
    );
    assert_eq!(
        theirs.a_aux_density.get_total_density(),
        ours.a_aux_density.total()
    );
    assert_eq!(
        theirs.b_input_density.get_total_density(),
        ours.b_input_density.total()
    );
    assert_eq!(
        theirs.b_aux_density.get_total_density(),
        ours.b_aux_density.total()
    );
}

fn bench_porep_synthesis(c: &mut Criterion) {
    let config = PorepConfig {
        nodes: 64,
        layers: 2,
        challenges_per_partition: env_or("G16_BENCH_POREP_CHALLENGES", 3),
        partitions: env_or("G16_BENCH_POREP_PARTITIONS", 10),
    };
    let built = filecoin::porep_partitions(config, &mut OsRng);
    let circuits: Vec<PorepCircuit> = built.partitions.into_iter().map(|p| p.circuit).collect();
    let shape = CircuitShape::record(built.blank).expect("record the shape");
    let first = shape.synthesize(circuits[0].clone()).expect("synthesis");
    assert_eq!(first, synthesize(circuits[0].clone()).expect("synthesis"));
    check_same_work(&first, circuits[0].clone());
    eprintln!(
        "porep {config:?}: {} constraints, {} aux; per partition {:.0} MiB (witness, A/B/C); \
         recorded shape {:.0} MiB, shared; {} rayon threads",
        shape.num_constraints(),
        shape.num_aux(),
        assignment_bytes(&first) as f64 / MIB,
        shape_bytes(&shape) as f64 / MIB,
        rayon::current_num_threads(),
    );
    drop(first);

    let mut group = c.benchmark_group(format!(
        "porep_synthesis_{}k_constraints",
        shape.num_constraints() / 1000
    ));
    group.sample_size(10).sampling_mode(SamplingMode::Flat);

    let one = || circuits[0].clone();
    group.bench_function("1_partition/bellperson", |b| {
        b.iter_batched(
            one,
            |c| bellperson_synthesis::synthesize(c).unwrap(),
            BatchSize::PerIteration,
        )
    });
    group.bench_function("1_partition/ours_direct", |b| {
        b.iter_batched(one, |c| synthesize(c).unwrap(), BatchSize::PerIteration)
    });
    group.bench_function("1_partition/ours_precompiled", |b| {
        b.iter_batched(
            one,
            |c| shape.synthesize(c).unwrap(),
            BatchSize::PerIteration,
        )
    });
    // The floor of the pre-compiled path: the circuit's own code, run for its
    // witness values only; the rest is the parallel A/B/C products.
    group.bench_function("1_partition/ours_witness_only", |b| {
        b.iter_batched(
            one,
            |c| {
                let mut witness = WitnessAssignment::counting();
                c.synthesize(&mut witness).unwrap();
                witness
            },
            BatchSize::PerIteration,
        )
    });

    let n = circuits.len();
    let all = || circuits.clone();
    group.bench_function(format!("{n}_partitions/bellperson"), |b| {
        b.iter_batched(
            all,
            |cs| bellperson_synthesis::synthesize_many(cs).unwrap(),
            BatchSize::PerIteration,
        )
    });
    group.bench_function(format!("{n}_partitions/ours_direct"), |b| {
        b.iter_batched(
            all,
            |cs| {
                cs.into_par_iter()
                    .map(synthesize)
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap()
            },
            BatchSize::PerIteration,
        )
    });
    // create_proof_batch's synthesis: no shape beforehand; the first
    // partition is recorded while the others compute their witnesses.
    group.bench_function(format!("{n}_partitions/ours_batch"), |b| {
        b.iter_batched(
            all,
            |cs| synthesize_batch(cs).unwrap(),
            BatchSize::PerIteration,
        )
    });
    group.bench_function(format!("{n}_partitions/ours_precompiled"), |b| {
        b.iter_batched(
            all,
            |cs| shape.synthesize_many(cs).unwrap(),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_porep_synthesis);
criterion_main!(benches);
