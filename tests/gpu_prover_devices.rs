//! The GPU prover's keys and pending proofs on their devices: work is
//! bound to the device it started on, a dropped pending proof leaves the
//! device usable, a key that cannot fit or was made for another circuit
//! is refused before any work starts, an urgent call goes ahead of
//! running batches, and a batch spreads over every free device and
//! survives one that fails. Without a device every test prints that it skipped.
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/prover_checks.rs"]
mod prover_checks;

use std::time::{Duration, Instant};

use blstrs::Scalar;
use circuits::*;
use ff::Field;
use groth16_gpu::backend::cuda::reserve_device_memory;
use groth16_gpu::device::{DeviceMutex, GpuError};
use groth16_gpu::groth16::gpu::{finish_proof, prove_on_device, start_proof, GpuProvingKey};
use groth16_gpu::groth16::prove;
use groth16_gpu::pool::proofs_by_device;
use groth16_gpu::synthesis::synthesize;
use groth16_gpu::{
    create_proof_batch, create_proof_in_priority, generate_random_parameters, Error, Proof,
    ProverPool, ProvingKey,
};
use prover_checks::{assert_device_proves, circuit_of, field_heavy, fresh_rng, key_and_assignment};
use rand_chacha::ChaCha20Rng;

#[test]
fn work_is_bound_to_its_device() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::two_devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let circuit = FieldHeavy {
        steps: 1000,
        start: Some(Scalar::random(&mut rng)),
    };
    let blank = FieldHeavy {
        steps: 1000,
        start: None,
    };
    let (key, assignment) = key_and_assignment(blank, circuit, &mut rng);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let resident = GpuProvingKey::upload(&devices[0].lock(), &key).unwrap();

    // A key of device 0 with device 1's guard.
    let other = devices[1].lock();
    match start_proof(&other, &resident, &assignment, r, s) {
        Err(Error::Gpu(GpuError::WrongDevice {
            expected: 0,
            got: 1,
        })) => {}
        other => panic!("expected WrongDevice, got {other:?}"),
    }
    // A proof started on device 0, finished with device 1's guard.
    let pending = start_proof(&devices[0].lock(), &resident, &assignment, r, s).unwrap();
    match finish_proof(&other, pending) {
        Err(Error::Gpu(GpuError::WrongDevice {
            expected: 0,
            got: 1,
        })) => {}
        other => panic!("expected WrongDevice, got {other:?}"),
    }
    // Both devices still prove, each with its own key.
    drop(other);
    let expected = prove(&key, &assignment, r, s).unwrap();
    for device in devices {
        assert_device_proves(&device.lock(), &key, &assignment, r, s, &expected);
    }
}

#[test]
fn dropped_pending_proofs_free_the_device() {
    // Exclusive: it compares free memory before and after.
    let _memory = gpu::exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let steps = (1 << 16) - 3;
    let (key, assignment) = field_heavy(steps, &mut rng);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let guard = devices[0].lock();
    let resident = GpuProvingKey::upload(&guard, &key).unwrap();
    // One finished proof first: the kernels load lazily on their first
    // launch, and the driver's local-memory reservation grows with them,
    // which is not a leak (this test failed once that way when it ran
    // before every other test of the process).
    let expected = prove(&key, &assignment, r, s).unwrap();
    let (warm_up, _) = prove_on_device(&guard, &resident, &assignment, r, s).unwrap();
    assert_eq!(warm_up, expected);
    let before = guard.device().free_memory().unwrap();
    for _ in 0..20 {
        let pending = start_proof(&guard, &resident, &assignment, r, s).unwrap();
        drop(pending);
    }
    let after = guard.device().free_memory().unwrap();
    // Stream-ordered pools may keep a little; 20 leaked proofs would not fit in this.
    assert!(
        after + (64 << 20) >= before,
        "free memory fell from {before} to {after} after dropped proofs"
    );
    drop(resident);
    assert_device_proves(&guard, &key, &assignment, r, s, &expected);
}

#[test]
fn a_key_that_cannot_fit_is_refused_before_upload() {
    let _memory = gpu::exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let steps = (1 << 14) - 3;
    let (key, assignment) = field_heavy(steps, &mut rng);
    let guard = devices[0].lock();
    let free = guard.device().free_memory().unwrap();
    let needed = GpuProvingKey::required_bytes(&key);
    // Leave less than the key needs.
    let hold = free.saturating_sub(needed / 2);
    let reservation = reserve_device_memory(&guard, hold).expect("reserve device memory");
    match GpuProvingKey::upload(&guard, &key) {
        Err(Error::Gpu(GpuError::OutOfMemory { needed: n, .. })) => assert_eq!(n, needed),
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    drop(reservation);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let expected = prove(&key, &assignment, r, s).unwrap();
    assert_device_proves(&guard, &key, &assignment, r, s, &expected);
}

#[test]
fn a_key_for_another_circuit_is_an_error() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let (key, _) = key_and_assignment(
        FieldHeavy {
            steps: 100,
            start: None,
        },
        FieldHeavy {
            steps: 100,
            start: Some(Scalar::ONE),
        },
        &mut rng,
    );
    let assignment = synthesize(FieldHeavy {
        steps: 200,
        start: Some(Scalar::ONE),
    })
    .unwrap();
    let guard = devices[0].lock();
    let resident = GpuProvingKey::upload(&guard, &key).unwrap();
    let result = start_proof(&guard, &resident, &assignment, Scalar::ONE, Scalar::ONE);
    assert!(
        matches!(result, Err(Error::KeyMismatch { .. })),
        "{result:?}"
    );
}

/// An urgent call (`create_proof_in_priority`, WinningPoSt's path) made
/// while batches hold every device: the batch on its device hands it over
/// between two proofs, so the urgent proof is done long before the
/// batches; every proof is the CPU prover's.
#[test]
fn an_urgent_proof_goes_ahead_of_running_batches() {
    // Exclusive: it needs every shared device held by its own batches.
    let _memory = gpu::exclusive_device_memory();
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let devices = DeviceMutex::all().expect("the shared devices");
    let mut rng = fresh_rng();
    let steps = (1 << 16) - 3;
    let blank = FieldHeavy { steps, start: None };
    let batch_key = generate_random_parameters(blank, &mut rng).expect("batch key");
    let urgent_circuit = circuit_of(1000, Scalar::random(&mut rng));
    let (urgent_key, urgent_assignment) = key_and_assignment(
        FieldHeavy {
            steps: 1000,
            start: None,
        },
        urgent_circuit.clone(),
        &mut rng,
    );
    let batch_len = 40;
    let batches: Vec<(Vec<FieldHeavy>, Vec<Scalar>, Vec<Scalar>)> = devices
        .iter()
        .map(|_| {
            let circuits = (0..batch_len)
                .map(|_| circuit_of(steps, Scalar::random(&mut rng)))
                .collect();
            let r_s = (0..batch_len).map(|_| Scalar::random(&mut rng)).collect();
            let s_s = (0..batch_len).map(|_| Scalar::random(&mut rng)).collect();
            (circuits, r_s, s_s)
        })
        .collect();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let began = Instant::now();
    let (batch_results, urgent) = std::thread::scope(|scope| {
        let running: Vec<_> = batches
            .iter()
            .map(|(circuits, r_s, s_s)| {
                let key = &batch_key;
                scope.spawn(move || {
                    let proofs =
                        create_proof_batch(circuits.clone(), key, r_s.clone(), s_s.clone());
                    (proofs, began.elapsed())
                })
            })
            .collect();
        // Every device held by a batch (after their witnesses).
        while !devices.iter().all(DeviceMutex::is_locked) {
            assert!(
                began.elapsed() < Duration::from_secs(300),
                "the batches never held every device"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let asked = began.elapsed();
        let proof = create_proof_in_priority(urgent_circuit, &urgent_key, r, s);
        let urgent = (proof, asked, began.elapsed());
        let results: Vec<_> = running.into_iter().map(|b| b.join().unwrap()).collect();
        (results, urgent)
    });
    let (proof, asked, done) = urgent;
    let last_batch = batch_results.iter().map(|(_, end)| *end).max().unwrap();
    println!(
        "urgent proof asked at {:.3} s, done at {:.3} s; batches of {batch_len} done at {:?}",
        asked.as_secs_f64(),
        done.as_secs_f64(),
        batch_results
            .iter()
            .map(|(_, end)| end.as_secs_f64())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        proof.expect("urgent proof"),
        prove(&urgent_key, &urgent_assignment, r, s).unwrap()
    );
    assert!(
        done < last_batch,
        "the urgent proof ended at {done:?}, after the batches ({last_batch:?})"
    );
    for ((proofs, _), (circuits, r_s, s_s)) in batch_results.into_iter().zip(&batches) {
        let proofs = proofs.expect("batch proofs");
        assert_eq!(proofs.len(), batch_len);
        // The batch's first and last proofs, either side of the hand-over.
        for k in [0, batch_len - 1] {
            let assignment = synthesize(circuits[k].clone()).unwrap();
            let expected = prove(&batch_key, &assignment, r_s[k], s_s[k]).unwrap();
            assert_eq!(proofs[k], expected, "batch proof {k}");
        }
    }
}

/// A batch through the bellperson-shaped functions on a host of several
/// devices: every free device proves part of it (each with the key
/// resident), and the proofs are the CPU prover's, in order.
#[test]
fn a_batch_spreads_over_every_free_device() {
    // Exclusive: no other test may hold a shared device meanwhile.
    let _memory = gpu::exclusive_device_memory();
    if gpu::two_devices_or_skip().is_none() {
        return;
    }
    let devices = DeviceMutex::all().expect("the shared devices").len();
    let batch = FieldBatch::random((1 << 16) - 3, 24, &mut fresh_rng());
    let (proofs, made) = batch.prove(devices);
    println!("24 proofs over {devices} devices: {made:?}");
    assert_eq!(made.iter().sum::<u64>(), 24);
    assert!(
        made.iter().all(|&n| n > 0),
        "a device proved none: {made:?}"
    );
    batch.check(&proofs.expect("batch proofs"));
}

/// A batch through the bellperson-shaped functions whose device 0 fails
/// (injected failures into the default pool): the failed jobs are retried
/// on another device (the same one on a host of one); every proof is the
/// CPU prover's, in order. (Past the retry limit the CPU proves a job:
/// tests/pool.rs.)
#[test]
fn a_device_that_fails_mid_batch_leaves_its_proofs_to_the_others() {
    // Exclusive: no other test's jobs may take the injected failures.
    let _memory = gpu::exclusive_device_memory();
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let devices = DeviceMutex::all().expect("the shared devices").len();
    let pool = ProverPool::global().expect("the default pool");
    let mut rng = fresh_rng();
    let batch = FieldBatch::random((1 << 14) - 3, 12, &mut rng);
    let failures_before = pool.stats()[0].failures;
    pool.inject_failures(0, 2);
    let (proofs, made) = batch.prove(devices);
    println!("12 proofs, device 0 failing twice: made {made:?} on the devices");
    assert_eq!(pool.stats()[0].failures - failures_before, 2);
    assert_eq!(made.iter().sum::<u64>(), 12, "the devices make every proof");
    batch.check(&proofs.expect("the batch survives a device's failure"));

    // The device proves again afterwards.
    let again = FieldBatch::random((1 << 14) - 3, 1, &mut rng);
    let (proofs, _) = again.prove(devices);
    again.check(&proofs.expect("a batch after the failure"));
}

/// A key for FieldHeavy of `steps` steps and a batch of `len` circuits
/// with their r and s.
struct FieldBatch {
    key: ProvingKey,
    circuits: Vec<FieldHeavy>,
    r_s: Vec<Scalar>,
    s_s: Vec<Scalar>,
}

impl FieldBatch {
    fn random(steps: usize, len: usize, rng: &mut ChaCha20Rng) -> Self {
        let key = generate_random_parameters(FieldHeavy { steps, start: None }, &mut *rng)
            .expect("a key");
        let circuits = (0..len)
            .map(|_| circuit_of(steps, Scalar::random(&mut *rng)))
            .collect();
        let r_s = (0..len).map(|_| Scalar::random(&mut *rng)).collect();
        let s_s = (0..len).map(|_| Scalar::random(&mut *rng)).collect();
        Self {
            key,
            circuits,
            r_s,
            s_s,
        }
    }

    /// Through `create_proof_batch`, with the proofs each device made.
    fn prove(&self, devices: usize) -> (Result<Vec<Proof>, Error>, Vec<u64>) {
        let before = proofs_by_device();
        let proofs = create_proof_batch(
            self.circuits.clone(),
            &self.key,
            self.r_s.clone(),
            self.s_s.clone(),
        );
        let after = proofs_by_device();
        let made = (0..devices)
            .map(|d| after.get(d).copied().unwrap_or(0) - before.get(d).copied().unwrap_or(0))
            .collect();
        (proofs, made)
    }

    /// Each proof the CPU prover's for its circuit, r and s.
    fn check(&self, proofs: &[Proof]) {
        assert_eq!(proofs.len(), self.circuits.len());
        for (k, circuit) in self.circuits.iter().enumerate() {
            let assignment = synthesize(circuit.clone()).unwrap();
            let expected = prove(&self.key, &assignment, self.r_s[k], self.s_s[k]).unwrap();
            assert_eq!(proofs[k], expected, "proof {k}");
        }
    }
}
