//! The GPU prover's keys and pending proofs on their devices: work is
//! bound to the device it started on, a dropped pending proof leaves the
//! device usable, a key that cannot fit or was made for another circuit
//! is refused before any work starts. Without a device every test prints
//! that it skipped.
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/prover_checks.rs"]
mod prover_checks;

use blstrs::Scalar;
use circuits::*;
use ff::Field;
use groth16_gpu::backend::cuda::reserve_device_memory;
use groth16_gpu::device::GpuError;
use groth16_gpu::groth16::gpu::{finish_proof, prove_on_device, start_proof, GpuProvingKey};
use groth16_gpu::groth16::prove;
use groth16_gpu::synthesis::synthesize;
use groth16_gpu::Error;
use prover_checks::{assert_device_proves, field_heavy, fresh_rng, key_and_assignment};

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
    for device in &devices {
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
