//! The GPU prover against the CPU prover (GPU): for the same r and s the
//! proofs are the same bytes, bellperson's verifier accepts them, from an
//! evaluated assignment or a witness and its shape, on one device or split
//! over several. Keys and pending proofs bound to their device:
//! tests/gpu_prover_devices.rs. Without a device every test prints that it
//! skipped.
//!
//! G16_GPU_PROVER_MAX_LOG (default 18) sets the largest circuit, 2^k
//! constraints, of the size sweep (the bundle's run sets 22).
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/env.rs"]
mod env;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/prover_checks.rs"]
mod prover_checks;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use circuits::*;
use env::env_or;
use ff::Field;
use groth16_gpu::backend::cpu::{compute_h, Domain};
use groth16_gpu::backend::cuda::{h_polynomial, HInputs, PinnedStaging};
use groth16_gpu::device::{DeviceGuard, DeviceMutex, GpuError};
use groth16_gpu::groth16::gpu::{
    finish_proof, finish_proof_timed, keep_keys_resident, prove_on_device, prove_split,
    release_resident_keys, resident_keys, start_proof, start_proof_shaped, GpuProvingKey,
};
use groth16_gpu::groth16::prove;
use groth16_gpu::synthesis::{synthesize, Assignment, CircuitShape};
use groth16_gpu::{
    create_proof, create_proof_batch, generate_parameters_for_shape_random, Error, ProvingKey,
};
use prover_checks::{bellperson_accepts, circuit_of, field_heavy, fresh_rng, key_and_assignment};
use rand_chacha::ChaCha20Rng;

/// GPU and CPU proofs of one assignment: the same bytes, and valid.
fn check_same_proof(
    device: &DeviceMutex,
    key: &ProvingKey,
    assignment: &Assignment,
    inputs: &[Scalar],
    rng: &mut ChaCha20Rng,
) {
    let r = Scalar::random(&mut *rng);
    let s = Scalar::random(&mut *rng);
    let guard = device.lock();
    let resident = GpuProvingKey::upload(&guard, key).expect("upload the key");
    let (gpu, times) = prove_on_device(&guard, &resident, assignment, r, s).expect("GPU proof");
    let cpu = prove(key, assignment, r, s).expect("CPU proof");
    assert_eq!(gpu.to_bytes(), cpu.to_bytes(), "GPU and CPU proofs differ");
    assert!(
        bellperson_accepts(&key.vk, &gpu, inputs),
        "bellperson rejects the GPU proof"
    );
    println!(
        "device {}: {} constraints: {times:?}",
        guard.device().ordinal(),
        assignment.num_constraints()
    );
}

#[test]
fn gpu_proofs_equal_cpu_proofs_on_the_test_circuits() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    for device in devices {
        let message: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        let inputs = Sha256Circuit::public_inputs(&message);
        let (key, assignment) = key_and_assignment(
            Sha256Circuit::blank(message.len()),
            Sha256Circuit::new(message),
            &mut rng,
        );
        check_same_proof(device, &key, &assignment, &inputs, &mut rng);

        let circuit = BooleanHeavy::random(3000, &mut rng);
        let inputs = circuit.public_inputs();
        let blank = BooleanHeavy {
            num_bits: 3000,
            bits: None,
        };
        let (key, assignment) = key_and_assignment(blank, circuit, &mut rng);
        check_same_proof(device, &key, &assignment, &inputs, &mut rng);

        let circuit = ManyInputs {
            values: random_scalars(7, &mut rng),
        };
        let inputs = circuit.public_inputs();
        let blank = ManyInputs {
            values: vec![None; 7],
        };
        let (key, assignment) = key_and_assignment(blank, circuit, &mut rng);
        check_same_proof(device, &key, &assignment, &inputs, &mut rng);

        for start in [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::random(&mut rng),
        ] {
            let circuit = FieldHeavy {
                steps: 5000,
                start: Some(start),
            };
            let inputs = vec![circuit.result()];
            let blank = FieldHeavy {
                steps: 5000,
                start: None,
            };
            let (key, assignment) = key_and_assignment(blank, circuit, &mut rng);
            check_same_proof(device, &key, &assignment, &inputs, &mut rng);
        }
    }
}

#[test]
fn gpu_proofs_equal_cpu_proofs_up_to_the_largest_size() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let max_log: u32 = env_or("G16_GPU_PROVER_MAX_LOG", 18);
    let mut rng = fresh_rng();
    let mut log = 12;
    while log <= max_log {
        // Two constraints go to the inputs: 2^log - 3 steps leaves the
        // domain one short of full, exercising the padding.
        let steps = (1usize << log) - 3;
        let circuit = FieldHeavy {
            steps,
            start: Some(Scalar::random(&mut rng)),
        };
        let inputs = vec![circuit.result()];
        let (key, assignment) =
            key_and_assignment(FieldHeavy { steps, start: None }, circuit, &mut rng);
        check_same_proof(&devices[0], &key, &assignment, &inputs, &mut rng);
        log += 2;
    }
}

#[test]
fn h_polynomial_on_the_device_equals_the_cpu() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let guard = devices[0].lock();
    let mut staging = PinnedStaging::new(3 * (1 << 20)).expect("pinned memory");
    // Domains of one to three NTT passes (up to eight stages each).
    for n in [
        1usize,
        2,
        3,
        200,
        1000,
        1024,
        (1 << 16) + 7,
        (1 << 17) + 3,
        1 << 20,
    ] {
        let random = |rng: &mut ChaCha20Rng| -> Vec<Scalar> {
            (0..n).map(|_| Scalar::random(&mut *rng)).collect()
        };
        let (a, b) = (random(&mut rng), random(&mut rng));
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(a, b)| a * b).collect();
        let domain = Domain::new(n).unwrap();
        let expected = compute_h(&domain, &a, &b, &c);
        let (on_device, _) = h_polynomial(&guard, &domain, &a, &b, &c).expect("H on the GPU");
        let got = on_device.download(&guard, domain.size()).unwrap();
        assert_eq!(got[..domain.size() - 1], expected[..], "n = {n}");
        assert_eq!(
            got[domain.size() - 1],
            Scalar::ZERO,
            "n = {n}: top coefficient"
        );
        // The same through a pinned staging buffer, reused across sizes.
        let staged = HInputs::upload_staged(&guard, &domain, &a, &b, &c, &mut staging)
            .expect("staged upload");
        let (on_device, _) = staged
            .compute(&guard, &domain)
            .expect("H from staged inputs");
        assert_eq!(
            on_device.download(&guard, domain.size()).unwrap(),
            got,
            "n = {n}: staged"
        );
    }
}

#[test]
fn bellperson_shaped_functions_prove_on_the_gpu() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let circuit = FieldHeavy {
        steps: 3000,
        start: Some(Scalar::random(&mut rng)),
    };
    let inputs = vec![circuit.result()];
    let blank = FieldHeavy {
        steps: 3000,
        start: None,
    };
    let (key, assignment) = key_and_assignment(blank, circuit.clone(), &mut rng);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let auto = create_proof(circuit, &key, r, s).expect("create_proof");
    assert_eq!(auto, prove(&key, &assignment, r, s).unwrap());
    assert!(bellperson_accepts(&key.vk, &auto, &inputs));

    // A batch (proved from witnesses, two in flight): each proof equals
    // the CPU prover's of its own assignment.
    let circuits: Vec<FieldHeavy> = [Scalar::ZERO, Scalar::ONE, -Scalar::ONE]
        .into_iter()
        .chain([Scalar::random(&mut rng), Scalar::random(&mut rng)])
        .map(|start| FieldHeavy {
            steps: 3000,
            start: Some(start),
        })
        .collect();
    let r_s: Vec<Scalar> = (0..circuits.len())
        .map(|_| Scalar::random(&mut rng))
        .collect();
    let s_s: Vec<Scalar> = (0..circuits.len())
        .map(|_| Scalar::random(&mut rng))
        .collect();
    let proofs = create_proof_batch(circuits.clone(), &key, r_s.clone(), s_s.clone())
        .expect("create_proof_batch");
    assert_eq!(proofs.len(), circuits.len());
    for (((circuit, proof), r), s) in circuits.into_iter().zip(&proofs).zip(&r_s).zip(&s_s) {
        let inputs = vec![circuit.result()];
        let assignment = synthesize(circuit).unwrap();
        assert_eq!(proof, &prove(&key, &assignment, *r, *s).unwrap());
        assert!(bellperson_accepts(&key.vk, proof, &inputs));
    }

    // One circuit of another shape fails the batch, and the next works.
    let mixed = vec![
        FieldHeavy {
            steps: 3000,
            start: Some(Scalar::ONE),
        },
        FieldHeavy {
            steps: 2999,
            start: Some(Scalar::ONE),
        },
    ];
    let result = create_proof_batch(mixed, &key, vec![r; 2], vec![s; 2]);
    assert!(matches!(result, Err(Error::ShapeMismatch(_))), "{result:?}");
    let again = create_proof_batch(
        vec![circuit_of(3000, Scalar::ONE); 2],
        &key,
        vec![r; 2],
        vec![s; 2],
    );
    assert_eq!(again.expect("a batch after the failed one").len(), 2);

    // The key stays resident between calls on each device that proved with
    // it (a batch spreads over the devices, a single proof takes one); a
    // second key joins it (KEYS_PER_DEVICE), and keeping can be turned off
    // and the keys released.
    let kept = 1..=devices.len();
    assert!(kept.contains(&resident_keys()), "{}", resident_keys());
    release_resident_keys();
    assert_eq!(resident_keys(), 0);
    let circuit = circuit_of(3000, Scalar::random(&mut rng));
    let again = create_proof(circuit.clone(), &key, r, s).expect("with the kept key");
    assert_eq!(
        again,
        prove(&key, &synthesize(circuit.clone()).unwrap(), r, s).unwrap()
    );
    assert_eq!(resident_keys(), 1);
    let (other_key, _) = key_and_assignment(
        FieldHeavy {
            steps: 3000,
            start: None,
        },
        circuit.clone(),
        &mut rng,
    );
    let other = create_proof(circuit.clone(), &other_key, r, s).expect("another key");
    assert_eq!(
        other,
        prove(&other_key, &synthesize(circuit.clone()).unwrap(), r, s).unwrap()
    );
    assert_eq!(resident_keys(), 2);
    release_resident_keys();
    assert_eq!(resident_keys(), 0);
    keep_keys_resident(false);
    create_proof(circuit.clone(), &key, r, s).expect("nothing kept");
    assert_eq!(resident_keys(), 0);
    keep_keys_resident(true);
}

/// A proof started from a witness and its shape (A, B, C evaluated into the
/// pinned upload buffer) is the proof of the evaluated assignment, for
/// sizes within one upload piece and across two (2^19 rows a piece).
#[test]
fn shaped_proofs_equal_evaluated_proofs() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    let guard = devices[0].lock();
    let bits = BooleanHeavy::random(3000, &mut rng);
    let inputs = bits.public_inputs();
    let blank = BooleanHeavy {
        num_bits: 3000,
        bits: None,
    };
    check_shaped_proof(&guard, blank, bits, &inputs, &mut rng);
    let steps = env_or("G16_TEST_SHAPED_STEPS", 600_000);
    let field = FieldHeavy {
        steps,
        start: Some(Scalar::random(&mut rng)),
    };
    let inputs = vec![field.result()];
    let blank = FieldHeavy { steps, start: None };
    check_shaped_proof(&guard, blank, field, &inputs, &mut rng);
}

/// start_proof_shaped against start_proof on one circuit; then a witness
/// that breaks a row and one of the wrong length are refused, and the
/// device proves on.
fn check_shaped_proof<C: Circuit<Scalar>>(
    guard: &DeviceGuard<'_>,
    blank: C,
    circuit: C,
    inputs: &[Scalar],
    rng: &mut ChaCha20Rng,
) {
    let shape = CircuitShape::record(blank).expect("record the shape");
    let witness = shape.witness(circuit).expect("witness");
    let key = generate_parameters_for_shape_random(&shape, &mut *rng).expect("generate a key");
    let assignment = shape.assign(witness.clone()).expect("assign");
    let resident = GpuProvingKey::upload(guard, &key).expect("upload the key");
    let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    let evaluated = start_proof(guard, &resident, &assignment, r, s).expect("start");
    let evaluated = finish_proof(guard, evaluated).expect("finish");
    let shaped = start_proof_shaped(guard, &resident, &shape, &witness, r, s)
        .expect("start from the witness");
    let (shaped, times) = finish_proof_timed(guard, shaped).expect("finish");
    assert_eq!(
        shaped.to_bytes(),
        evaluated.to_bytes(),
        "shaped and evaluated proofs differ"
    );
    assert!(
        bellperson_accepts(&key.vk, &shaped, inputs),
        "bellperson rejects the shaped proof"
    );
    println!("{} constraints, shaped: {times:?}", shape.num_constraints());

    let mut broken = witness.clone();
    let last = broken.aux.len() - 1;
    broken.aux[last] += Scalar::ONE;
    let result = start_proof_shaped(guard, &resident, &shape, &broken, r, s);
    assert!(
        matches!(result, Err(Error::Unsatisfied { .. })),
        "{result:?}"
    );
    let mut short = witness.clone();
    short.aux.pop();
    let result = start_proof_shaped(guard, &resident, &shape, &short, r, s);
    assert!(matches!(result, Err(Error::ShapeMismatch(_))), "{result:?}");
    let again = start_proof_shaped(guard, &resident, &shape, &witness, r, s).expect("start");
    assert_eq!(finish_proof(guard, again).expect("finish"), evaluated);
}

/// Bits first, then full-field steps: a witness whose l, a and b scalars
/// are sparse (general values among 0s and 1s) and cost enough that a
/// split proof divides one of them between devices.
struct BitsThenField {
    bits: BooleanHeavy,
    field: FieldHeavy,
}

impl Circuit<Scalar> for BitsThenField {
    fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellpepper_core::SynthesisError> {
        self.bits.synthesize(&mut cs.namespace(|| "bits"))?;
        self.field.synthesize(&mut cs.namespace(|| "field"))
    }
}

#[test]
fn a_proof_split_over_devices_equals_the_cpu_proof() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = fresh_rng();
    // With one GPU the split runs whole on it; the planned division over
    // several devices is unit-tested in src/groth16/gpu/division.rs.
    let guards: Vec<_> = devices.iter().map(DeviceMutex::lock).collect();
    // Dense full-field scalars; bits, whose MSMs are cheap beside the H
    // polynomial (they stay whole on the second device); bits then field
    // values, where a sparse MSM with a bitmap of ones is divided.
    let steps = (1 << 14) - 3;
    let boolean = BooleanHeavy::random(20_000, &mut rng);
    let blank = BooleanHeavy {
        num_bits: 20_000,
        bits: None,
    };
    let mixed = BitsThenField {
        bits: BooleanHeavy::random(2000, &mut rng),
        field: FieldHeavy {
            steps: 8000,
            start: Some(Scalar::random(&mut rng)),
        },
    };
    let mixed_blank = BitsThenField {
        bits: BooleanHeavy {
            num_bits: 2000,
            bits: None,
        },
        field: FieldHeavy {
            steps: 8000,
            start: None,
        },
    };
    let circuits = [
        ("FieldHeavy", field_heavy(steps, &mut rng)),
        ("BooleanHeavy", key_and_assignment(blank, boolean, &mut rng)),
        (
            "BitsThenField",
            key_and_assignment(mixed_blank, mixed, &mut rng),
        ),
    ];
    for (name, (key, assignment)) in &circuits {
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let expected = prove(key, assignment, r, s).unwrap();
        let residents: Vec<_> = guards
            .iter()
            .map(|guard| GpuProvingKey::upload(guard, key).unwrap())
            .collect();
        // Every prefix of the devices: one, two, ... all of them.
        for count in 1..=guards.len() {
            let guard_refs: Vec<_> = guards[..count].iter().collect();
            let key_refs: Vec<_> = residents[..count].iter().collect();
            let (proof, _) = prove_split(&guard_refs, &key_refs, assignment, r, s).unwrap();
            assert_eq!(proof, expected, "{name} split over {count} devices");
        }
    }
    let (key, assignment) = &circuits[0].1;
    let (r, s) = (Scalar::ONE, Scalar::ONE);
    let residents: Vec<_> = guards
        .iter()
        .map(|guard| GpuProvingKey::upload(guard, key).unwrap())
        .collect();
    // Keys in the wrong order are refused, not used across devices.
    if guards.len() >= 2 && residents[0].ordinal() != residents[1].ordinal() {
        let swapped = [&residents[1], &residents[0]];
        let result = prove_split(&[&guards[0], &guards[1]], &swapped, assignment, r, s);
        assert!(
            matches!(result, Err(Error::Gpu(GpuError::WrongDevice { .. }))),
            "{result:?}"
        );
    }
}
