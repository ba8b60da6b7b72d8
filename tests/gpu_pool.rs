//! The prover pool on GPUs (GPU): the regression test for the bug this crate
//! exists for, many threads proving partitions on every device at once with
//! every proof valid and every device at work; the same on one device;
//! retries after a device failure; keys kept resident. Without a device
//! every test prints that it skipped.
//!
//! G16_GPU_POOL_ROUNDS (default 20) sets the rounds per thread,
//! G16_GPU_POOL_LOG (default 14) the circuit size, 2^k constraints.
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/env.rs"]
mod env;
#[path = "common/gpu.rs"]
mod gpu;

use env::env_or;
use std::sync::{Arc, OnceLock};

use blstrs::Scalar;
use circuits::FieldHeavy;
use ff::Field;
use groth16_gpu::groth16::gpu::{release_resident_keys, GpuProvingKey};
use groth16_gpu::groth16::prove;
use groth16_gpu::pool::{PoolError, WorkerStats};
use groth16_gpu::synthesis::{synthesize, CircuitShape};
use groth16_gpu::{
    generate_parameters_for_shape_random, prepare_verifying_key, verify_proof, Error, Proof,
    ProverPool, ProvingKey,
};
use parking_lot::{Mutex, MutexGuard};
use rand_core::OsRng;

const THREADS: usize = 4;
const PARTITIONS: usize = 10;

/// A recorded FieldHeavy shape of 2^log constraints and a key for it.
struct Setup {
    steps: usize,
    shape: CircuitShape,
    key: Arc<ProvingKey>,
}

impl Setup {
    fn new(log: u32) -> Self {
        let steps = (1usize << log) - 2;
        let shape = CircuitShape::record(FieldHeavy { steps, start: None }).unwrap();
        let key = Arc::new(generate_parameters_for_shape_random(&shape, &mut OsRng).unwrap());
        Self { steps, shape, key }
    }

    /// The key for the partition tests, made once.
    fn shared() -> &'static Setup {
        static SETUP: OnceLock<Setup> = OnceLock::new();
        SETUP.get_or_init(|| Setup::new(env_or("G16_GPU_POOL_LOG", 14)))
    }

    fn circuits(&self, n: usize) -> Vec<FieldHeavy> {
        (0..n)
            .map(|_| FieldHeavy {
                steps: self.steps,
                start: Some(Scalar::random(OsRng)),
            })
            .collect()
    }

    /// Bytes a worker uploads for its stats: keys plus a, b, c per proof.
    fn expected_bytes(&self, worker: &WorkerStats) -> u64 {
        let domain = (self.shape.num_constraints().next_power_of_two() * 32) as u64;
        worker.key_uploads * GpuProvingKey::points_bytes(&self.key) + worker.proofs * 3 * domain
    }
}

/// Resident keys are kept for the whole process, whichever pool uploaded
/// them, so a pool's upload count depends on what ran before it: the tests
/// that prove start with no key kept and run one at a time.
fn no_key_kept() -> MutexGuard<'static, ()> {
    static PROVING: Mutex<()> = Mutex::new(());
    let proving = PROVING.lock();
    release_resident_keys();
    proving
}

fn scalars(n: usize) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(OsRng)).collect()
}

fn assert_valid(setup: &Setup, circuits: &[FieldHeavy], proofs: &[Proof]) {
    assert_eq!(proofs.len(), circuits.len());
    let pvk = prepare_verifying_key(&setup.key.vk);
    for (i, (circuit, proof)) in circuits.iter().zip(proofs).enumerate() {
        assert!(
            verify_proof(&pvk, proof, &[circuit.result()]).unwrap(),
            "partition {i} does not verify"
        );
    }
}

/// THREADS threads, each proving `rounds` batches of PARTITIONS circuits
/// through the pool at once (synthesized by the pool, or before); the first
/// batch is also compared with the CPU prover, byte for byte.
fn prove_partitions_from_threads(pool: &Arc<ProverPool>, rounds: usize) {
    let setup = Setup::shared();
    let threads: Vec<_> = (0..THREADS)
        .map(|thread| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                for round in 0..rounds {
                    let circuits = setup.circuits(PARTITIONS);
                    let (r_s, s_s) = (scalars(PARTITIONS), scalars(PARTITIONS));
                    let proofs = if round % 2 == 0 {
                        let shape = Some(&setup.shape);
                        pool.prove_circuits(
                            &setup.key,
                            shape,
                            circuits.clone(),
                            r_s.clone(),
                            s_s.clone(),
                        )
                    } else {
                        let assignments = circuits
                            .iter()
                            .map(|c| synthesize(c.clone()).unwrap())
                            .collect();
                        pool.prove_batch(&setup.key, assignments, r_s.clone(), s_s.clone())
                    }
                    .unwrap_or_else(|e| panic!("thread {thread}, round {round}: {e}"));
                    assert_valid(setup, &circuits, &proofs);
                    if thread == 0 && round == 0 {
                        for (i, circuit) in circuits.iter().enumerate() {
                            let assignment = setup.shape.synthesize(circuit.clone()).unwrap();
                            let cpu = prove(&setup.key, &assignment, r_s[i], s_s[i]).unwrap();
                            assert_eq!(proofs[i], cpu, "partition {i}: GPU and CPU proofs differ");
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

/// Every worker proved, none failed, and its upload count adds up.
fn assert_every_worker_worked(pool: &ProverPool, rounds: usize) {
    let setup = Setup::shared();
    let stats = pool.stats();
    for worker in &stats {
        println!(
            "{}: {} proofs, busy {:?}, {} key uploads, {} MiB uploaded",
            worker.label,
            worker.proofs,
            worker.busy,
            worker.key_uploads,
            worker.bytes_uploaded >> 20
        );
        assert!(worker.proofs > 0, "{} did no work", worker.label);
        assert_eq!(
            worker.failures, 0,
            "{}: {:?}",
            worker.label, worker.last_failure
        );
        assert_eq!(
            worker.key_uploads, 1,
            "{}: the key stays resident",
            worker.label
        );
        assert_eq!(worker.bytes_uploaded, setup.expected_bytes(worker));
    }
    let total: u64 = stats.iter().map(|w| w.proofs).sum();
    assert_eq!(total, (THREADS * rounds * PARTITIONS) as u64);
}

#[test]
fn every_device_proves_partitions_from_four_threads() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let _proving = no_key_kept();
    let pool = Arc::new(ProverPool::all_gpus().unwrap());
    assert_eq!(pool.workers(), devices.len());
    for (i, worker) in pool.stats().iter().enumerate() {
        assert_eq!(worker.ordinal, Some(i));
    }
    let rounds = env_or("G16_GPU_POOL_ROUNDS", 20);
    prove_partitions_from_threads(&pool, rounds);
    assert_every_worker_worked(&pool, rounds);
}

#[test]
fn one_device_proves_partitions_from_four_threads() {
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let _proving = no_key_kept();
    let pool = Arc::new(ProverPool::gpus(&[0]).unwrap());
    assert_eq!(pool.stats()[0].ordinal, Some(0));
    let rounds = env_or("G16_GPU_POOL_ROUNDS", 20);
    prove_partitions_from_threads(&pool, rounds);
    assert_every_worker_worked(&pool, rounds);
}

#[test]
fn a_device_failure_is_retried_and_reported() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let setup = Setup::shared();
    let _proving = no_key_kept();
    let pool = ProverPool::all_gpus().unwrap();
    pool.inject_failures(0, 2);
    let circuits = setup.circuits(PARTITIONS);
    let (r_s, s_s) = (scalars(PARTITIONS), scalars(PARTITIONS));
    let reports = pool
        .prove_circuits_reports(&setup.key, Some(&setup.shape), circuits.clone(), r_s, s_s)
        .unwrap();
    let proofs: Vec<Proof> = reports
        .iter()
        .map(|r| *r.result.as_ref().unwrap())
        .collect();
    assert_valid(setup, &circuits, &proofs);
    // Each failure costs one more attempt: on another device when there is
    // one, else on the same.
    let retries: u32 = reports.iter().map(|r| r.attempts - 1).sum();
    assert_eq!(retries, 2);
    if devices.len() > 1 {
        let mut retried = reports.iter().filter(|r| r.attempts > 1);
        assert!(retried.clone().count() == 2 && retried.all(|r| r.worker != Some(0)));
    }
    let stats = pool.stats();
    assert_eq!(stats[0].failures, 2);
    assert!(stats[0].last_failure.is_some());
    let total: u64 = stats.iter().map(|w| w.proofs).sum();
    assert_eq!(total, PARTITIONS as u64);
}

#[test]
fn two_keys_stay_resident_on_one_device() {
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let (big, small) = (Setup::shared(), Setup::new(10));
    let _proving = no_key_kept();
    let pool = ProverPool::gpus(&[0]).unwrap();
    for _ in 0..3 {
        for setup in [big, &small] {
            let circuits = setup.circuits(2);
            let proofs = pool
                .prove_circuits(
                    &setup.key,
                    Some(&setup.shape),
                    circuits.clone(),
                    scalars(2),
                    scalars(2),
                )
                .unwrap();
            assert_valid(setup, &circuits, &proofs);
        }
    }
    let stats = &pool.stats()[0];
    assert_eq!((stats.proofs, stats.key_uploads), (12, 2));
}

#[test]
fn devices_must_exist_and_differ() {
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    assert!(matches!(
        ProverPool::gpus(&[0, 0]),
        Err(Error::Pool(PoolError::DuplicateDevice(0)))
    ));
    assert!(matches!(
        ProverPool::gpus(&[devices.len()]),
        Err(Error::Gpu(_))
    ));
    assert!(matches!(
        ProverPool::gpus(&[]),
        Err(Error::Pool(PoolError::NoWorkers))
    ));
}
