//! What the GPU prover's tests share (included by path, beside
//! common/circuits.rs as `circuits`): keys for the test circuits, proofs
//! checked on a device against an expected proof, bellperson's verifier.
#![allow(dead_code)]

use bellpepper_core::Circuit;
use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use ff::Field;
use groth16_gpu::device::DeviceGuard;
use groth16_gpu::groth16::gpu::{prove_on_device, GpuProvingKey};
use groth16_gpu::synthesis::{Assignment, CircuitShape};
use groth16_gpu::{generate_parameters_for_shape_random, ProvingKey, VerifyingKey};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::circuits::FieldHeavy;

pub fn fresh_rng() -> ChaCha20Rng {
    let seed = rand_core::OsRng.next_u64();
    eprintln!("seed {seed}");
    ChaCha20Rng::seed_from_u64(seed)
}

/// A key for `blank` and the assignment of `circuit`.
pub fn key_and_assignment<C: Circuit<Scalar>>(
    blank: C,
    circuit: C,
    rng: &mut ChaCha20Rng,
) -> (ProvingKey, Assignment) {
    let shape = CircuitShape::record(blank).expect("record the shape");
    let key = generate_parameters_for_shape_random(&shape, rng).expect("generate a key");
    let assignment = shape.synthesize(circuit).expect("synthesize");
    (key, assignment)
}

pub fn bellperson_accepts(
    vk: &VerifyingKey,
    proof: &groth16_gpu::Proof,
    inputs: &[Scalar],
) -> bool {
    let mut vk_bytes = Vec::new();
    vk.write(&mut vk_bytes).unwrap();
    let their_vk = bp::VerifyingKey::<Bls12>::read(&vk_bytes[..]).unwrap();
    let pvk = bp::prepare_verifying_key(&their_vk);
    let decoded = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    bp::verify_proof(&pvk, &decoded, inputs).unwrap()
}

/// Uploads `key` to the guard's device and proves there; must equal `expected`.
pub fn assert_device_proves(
    guard: &DeviceGuard<'_>,
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
    expected: &groth16_gpu::Proof,
) {
    let resident = GpuProvingKey::upload(guard, key).expect("upload the key");
    let (proof, _) = prove_on_device(guard, &resident, assignment, r, s).expect("GPU proof");
    assert_eq!(&proof, expected, "device {}", guard.device().ordinal());
}

/// A key for FieldHeavy with `steps` steps, the assignment of a random start.
pub fn field_heavy(steps: usize, rng: &mut ChaCha20Rng) -> (ProvingKey, Assignment) {
    let circuit = FieldHeavy {
        steps,
        start: Some(Scalar::random(&mut *rng)),
    };
    key_and_assignment(FieldHeavy { steps, start: None }, circuit, rng)
}

/// FieldHeavy with `steps` steps from `start`.
pub fn circuit_of(steps: usize, start: Scalar) -> FieldHeavy {
    FieldHeavy {
        steps,
        start: Some(start),
    }
}
