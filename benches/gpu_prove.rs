//! The GPU prover against the CPU prover in the same group, key resident,
//! from assignment to proof (synthesis excluded: both take the same
//! pre-compiled assignment): FieldHeavy circuits of 2^16 to 2^20
//! constraints by default (G16_BENCH_GPU_MIN_LOG / _MAX_LOG change the
//! range; the CPU side stops at G16_BENCH_CPU_MAX_LOG, default 20). Without
//! a CUDA device it says so and measures nothing.
//!
//! `cargo bench --features cuda --bench gpu_prove`

#[path = "../tests/common/circuits.rs"]
mod circuits;
#[path = "../tests/common/env.rs"]
mod env;

use blstrs::Scalar;
use circuits::FieldHeavy;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use env::env_or;
use ff::Field;
use groth16_gpu::device::{Device, DeviceMutex};
use groth16_gpu::generate_parameters_for_shape_random;
use groth16_gpu::groth16::gpu::{finish_proof, start_proof, GpuProvingKey};
use groth16_gpu::groth16::prove;
use groth16_gpu::synthesis::CircuitShape;
use rand_core::OsRng;

fn bench_gpu_prove(c: &mut Criterion) {
    match Device::count() {
        Ok(n) if n > 0 => {}
        other => {
            println!("skipped: no CUDA device ({other:?})");
            return;
        }
    }
    let device = &DeviceMutex::all().expect("open the devices")[0];
    let (min_log, max_log) = (
        env_or("G16_BENCH_GPU_MIN_LOG", 16),
        env_or("G16_BENCH_GPU_MAX_LOG", 20),
    );
    let cpu_max_log = env_or("G16_BENCH_CPU_MAX_LOG", 20);
    let mut group = c.benchmark_group("gpu_prove_field_heavy");
    group.sample_size(10);
    for log in (min_log..=max_log).step_by(2) {
        let steps = (1usize << log) - 2;
        let shape = CircuitShape::record(FieldHeavy { steps, start: None }).unwrap();
        let key = generate_parameters_for_shape_random(&shape, &mut OsRng).unwrap();
        let assignment = shape
            .synthesize(FieldHeavy {
                steps,
                start: Some(Scalar::random(OsRng)),
            })
            .unwrap();
        let (r, s) = (Scalar::random(OsRng), Scalar::random(OsRng));
        let guard = device.lock();
        let resident = GpuProvingKey::upload(&guard, &key).unwrap();
        group.bench_function(BenchmarkId::new("gpu", format!("2^{log}")), |b| {
            b.iter(|| {
                let pending = start_proof(&guard, &resident, &assignment, r, s).unwrap();
                finish_proof(&guard, pending).unwrap()
            })
        });
        drop(guard);
        if log <= cpu_max_log {
            group.bench_function(BenchmarkId::new("cpu", format!("2^{log}")), |b| {
                b.iter(|| prove(&key, &assignment, r, s).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_gpu_prove);
criterion_main!(benches);
