//! Proving on the CPU, ours against bellperson 0.27 in the same group, so
//! each run gives the ratio. Sizes 2^10 to 2^18 constraints (set
//! G16_BENCH_MAX_LOG to stop earlier), a field-heavy and a boolean-heavy
//! circuit; ours both with direct synthesis and with a recorded shape.

#[path = "../tests/common/circuits.rs"]
mod circuits;
#[path = "../tests/common/env.rs"]
mod env;

use bellpepper_core::Circuit;
use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use circuits::{BooleanHeavy, FieldHeavy};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use env::env_or;
use ff::Field;
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{create_proof, generate_parameters_for_shape_random};
use rand_core::OsRng;

fn max_log() -> u32 {
    env_or("G16_BENCH_MAX_LOG", 18)
}

fn compare<C>(c: &mut Criterion, name: &str, log: u32, blank: C, make: impl Fn() -> C)
where
    C: Circuit<Scalar> + Clone + Send,
{
    let shape = CircuitShape::record(blank).unwrap();
    let key = generate_parameters_for_shape_random(&shape, &mut OsRng).unwrap();
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    let theirs = bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap();
    let (r, s) = (Scalar::random(OsRng), Scalar::random(OsRng));

    let mut group = c.benchmark_group(format!("prove_{name}"));
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("bellperson", format!("2^{log}")), |b| {
        b.iter(|| bp::create_proof(make(), &theirs, r, s).unwrap())
    });
    group.bench_function(BenchmarkId::new("ours_direct", format!("2^{log}")), |b| {
        b.iter(|| create_proof(make(), &key, r, s).unwrap())
    });
    group.bench_function(
        BenchmarkId::new("ours_precompiled", format!("2^{log}")),
        |b| {
            b.iter(|| {
                let assignment = shape.synthesize(make()).unwrap();
                groth16_gpu::groth16::prove(&key, &assignment, r, s).unwrap()
            })
        },
    );
    group.finish();
}

fn bench_prove(c: &mut Criterion) {
    for log in (10..=max_log()).step_by(2) {
        let steps = (1usize << log) - 2;
        let start = Scalar::random(OsRng);
        compare(c, "field", log, FieldHeavy { steps, start: None }, || {
            FieldHeavy {
                steps,
                start: Some(start),
            }
        });
        // Boolean-heavy: about 5 constraints per bit.
        let bits = ((1usize << log) - 8) / 5;
        let circuit = BooleanHeavy::random(bits, &mut OsRng);
        compare(
            c,
            "boolean",
            log,
            BooleanHeavy {
                num_bits: bits,
                bits: None,
            },
            || circuit.clone(),
        );
    }
}

criterion_group!(benches, bench_prove);
criterion_main!(benches);
