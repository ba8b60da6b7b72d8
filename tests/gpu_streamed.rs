//! Proofs with the key streamed to the device a chunk at a time (a key too
//! large to be resident): the CPU prover's bytes for chunks that do not
//! divide the queries, with the H polynomial on the device or the CPU,
//! and the bellperson-shaped functions and the prover pool stream a key
//! that no device can hold instead of proving on the CPU. Without a device
//! every test prints that it skipped.
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;
#[path = "common/prover_checks.rs"]
mod prover_checks;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use circuits::*;
use ff::Field;
use groth16_gpu::backend::cuda::{
    reserve_device_memory, DeviceReservation, DeviceScalars, PointStaging, ResidentBases,
};
use groth16_gpu::device::DeviceMutex;
use groth16_gpu::groth16::gpu::{
    prove_streamed, prove_streamed_tuned, release_resident_keys, resident_keys, GpuProvingKey,
    ProverTuning,
};
use groth16_gpu::groth16::prove;
use groth16_gpu::pool::proofs_by_device;
use groth16_gpu::synthesis::synthesize;
use groth16_gpu::{create_proof_batch, generate_random_parameters, Error, ProverPool};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use msm_inputs::{expected_g1, expected_g2, random_bases};
use prover_checks::{bellperson_accepts, circuit_of, field_heavy, fresh_rng, key_and_assignment};
use std::sync::Arc;

#[test]
fn streamed_proofs_are_the_cpu_provers() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let mut rng = fresh_rng();
    // Chunks of one point, of a size that divides no query, and chosen
    // from free memory (one chunk a query here); the queries' scalars sent
    // up once, or (as where the device has no room) left on the host.
    for (steps, chunk, from_host) in [
        (100, Some(1), false),
        (100, Some(3), true),
        ((1 << 12) - 3, Some(1000), false),
        ((1 << 12) - 3, Some(1000), true),
        ((1 << 16) - 3, Some(4099), false),
        ((1 << 16) - 3, None, false),
        ((1 << 16) - 3, None, true),
    ] {
        let (key, assignment) = field_heavy(steps, &mut rng);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let tuning = ProverTuning {
            stream_chunk_points: chunk,
            stream_scalars_from_host: from_host,
            ..ProverTuning::default()
        };
        let proof = prove_streamed_tuned(&guard, &key, &assignment, r, s, &tuning);
        let expected = prove(&key, &assignment, r, s).unwrap();
        assert_eq!(
            proof.unwrap(),
            expected,
            "{steps} steps, chunks {chunk:?}, scalars from the host {from_host}"
        );
    }
    // Queries that leave points out (a value only in C, many inputs),
    // r = s = 0, and 0/1 witnesses.
    let values = random_scalars(40, &mut rng);
    let circuit = ManyInputs { values };
    let inputs = circuit.public_inputs();
    let blank = ManyInputs {
        values: vec![None; 40],
    };
    let (key, assignment) = key_and_assignment(blank, circuit, &mut rng);
    let sevens = ProverTuning {
        stream_chunk_points: Some(7),
        ..ProverTuning::default()
    };
    let zero = Scalar::ZERO;
    let proof = prove_streamed_tuned(&guard, &key, &assignment, zero, zero, &sevens).unwrap();
    let boolean = BooleanHeavy::random(3000, &mut rng);
    let boolean_key = generate_random_parameters(
        BooleanHeavy {
            num_bits: 3000,
            bits: None,
        },
        &mut rng,
    )
    .unwrap();
    let boolean_assignment = synthesize(boolean.clone()).unwrap();
    let (r, s) = (Scalar::ONE, -Scalar::ONE);
    let boolean_proof =
        prove_streamed_tuned(&guard, &boolean_key, &boolean_assignment, r, s, &sevens);
    assert_eq!(
        proof,
        prove(&key, &assignment, Scalar::ZERO, Scalar::ZERO).unwrap()
    );
    assert!(bellperson_accepts(&key.vk, &proof, &inputs));
    let boolean_proof = boolean_proof.unwrap();
    assert_eq!(
        boolean_proof,
        prove(&boolean_key, &boolean_assignment, r, s).unwrap()
    );
    assert!(bellperson_accepts(
        &boolean_key.vk,
        &boolean_proof,
        &boolean.public_inputs()
    ));
    // A key made for another circuit is refused before any work.
    let (other_key, _) = field_heavy(50, &mut rng);
    assert!(matches!(
        prove_streamed(&guard, &other_key, &assignment, Scalar::ONE, Scalar::ONE),
        Err(Error::KeyMismatch { .. })
    ));
}

#[test]
fn staged_points_are_the_points_in_page_locked_memory() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let mut rng = fresh_rng();
    let g1: Vec<G1Affine> = (0..5000)
        .map(|_| (G1Projective::generator() * Scalar::random(&mut rng)).to_affine())
        .collect();
    let g2: Vec<G2Affine> = (0..3000)
        .map(|_| (G2Projective::generator() * Scalar::random(&mut rng)).to_affine())
        .collect();
    // Room for 5000 G1 points: 2500 G2 points.
    let mut staging = PointStaging::new(&guard, 5000 * 96);
    assert!(staging.is_pinned(), "the system refused to lock 480 kB");
    assert_eq!(
        (staging.points::<G1Affine>(), staging.points::<G2Affine>()),
        (5000, 2500)
    );
    assert_eq!(staging.stage(&g1[..]), &g1[..]);
    assert_eq!(staging.stage(&g2[..2500]), &g2[..2500]);
    assert_eq!(staging.stage(&g1[17..20]), &g1[17..20]);
    let too_many = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        staging.stage(&g2[..]).len()
    }));
    assert!(too_many.is_err(), "3000 G2 points do not fit");
}

#[test]
fn refilled_bases_sum_as_new_ones() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let mut rng = fresh_rng();
    let g2 = random_bases::<G2Affine>(1000, &mut rng);
    let mut scalars = msm_inputs::random_scalars(1000, &mut rng);
    scalars[..4].copy_from_slice(&[Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::ONE]);
    let mut resident = ResidentBases::upload(&guard, &g2[..1000]).unwrap();
    assert_eq!(resident.capacity(), 1000);
    // Fewer points, repeated ones and the identity, in the same memory.
    let mut others = g2[500..].to_vec();
    others.extend_from_slice(&[g2[3], g2[3], G2Affine::identity()]);
    resident.refill(&guard, &others).unwrap();
    assert_eq!((resident.len(), resident.capacity()), (503, 1000));
    assert_eq!(
        resident.msm(&guard, &scalars[..503]).unwrap(),
        expected_g2(&others, &scalars[..503])
    );
    // More than it has room for: refused, the points left as they were.
    assert!(
        resident.refill(&guard, &g2[..]).is_ok(),
        "room for exactly 1000"
    );
    let too_many: Vec<G2Affine> = g2.iter().chain(&g2[..1]).copied().collect();
    assert!(resident.refill(&guard, &too_many).is_err());
    assert_eq!(
        resident.msm(&guard, &scalars).unwrap(),
        expected_g2(&g2, &scalars)
    );
    // Bases with shifted copies would keep stale copies: refused.
    let mut copied = ResidentBases::upload(&guard, &g2[..64]).unwrap();
    copied.precompute(&guard, Some(16)).unwrap();
    assert!(copied.refill(&guard, &g2[..10]).is_err());
}

#[test]
fn chunks_read_their_share_of_scalars_left_on_the_device() {
    let _memory = gpu::shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let guard = devices[0].lock();
    let mut rng = fresh_rng();
    // Scalars as the H polynomial leaves them: on the device, longer than
    // any one chunk, with 0, 1, r - 1 and a repeated base among them.
    let mut scalars = msm_inputs::random_scalars(3001, &mut rng);
    for (at, value) in [(0, Scalar::ZERO), (1, Scalar::ONE), (1999, -Scalar::ONE)] {
        scalars[at] = value;
    }
    let on_device = DeviceScalars::upload(&guard, &scalars, 3072).unwrap();
    let mut g1 = random_bases::<G1Affine>(1000, &mut rng);
    g1[7] = g1[6];
    g1[8] = G1Affine::identity();
    let chunk = ResidentBases::upload(&guard, &g1).unwrap();
    for (first, n) in [
        (0, 1000),
        (1, 999),
        (1999, 1000),
        (2072, 1000),
        (3071, 1),
        (17, 0),
    ] {
        let got = chunk
            .msm_device_scalars_from(&guard, &on_device, first, n)
            .unwrap();
        // Past the uploaded values the buffer holds zeros.
        let mut want: Vec<Scalar> = scalars.iter().skip(first).take(n).copied().collect();
        want.resize(n, Scalar::ZERO);
        assert_eq!(
            got,
            expected_g1(&g1[..n], &want),
            "{n} scalars from {first}"
        );
    }
    let g2 = random_bases::<G2Affine>(300, &mut rng);
    let g2_chunk = ResidentBases::upload(&guard, &g2).unwrap();
    assert_eq!(
        g2_chunk
            .msm_device_scalars_from(&guard, &on_device, 1900, 300)
            .unwrap(),
        expected_g2(&g2, &scalars[1900..2200])
    );
    // Past the scalars or the bases: refused, nothing read.
    assert!(chunk
        .msm_device_scalars_from(&guard, &on_device, 2073, 1000)
        .is_err());
    assert!(chunk
        .msm_device_scalars_from(&guard, &on_device, usize::MAX, 2)
        .is_err());
    assert!(chunk
        .msm_device_scalars_from(&guard, &on_device, 0, 1001)
        .is_err());
    // The device still works after the refusals.
    assert_eq!(
        chunk
            .msm_device_scalars_from(&guard, &on_device, 5, 10)
            .unwrap(),
        expected_g1(&g1[..10], &scalars[5..15])
    );
}

/// Holds all but `left` bytes of every shared device's memory.
fn leave_free(devices: &[DeviceMutex], left: u64) -> Vec<DeviceReservation> {
    devices
        .iter()
        .map(|device| {
            let guard = device.lock();
            let free = guard.device().free_memory().unwrap();
            reserve_device_memory(&guard, free.saturating_sub(left)).expect("reserve")
        })
        .collect()
}

#[test]
fn a_key_no_device_can_hold_is_streamed_not_proved_on_the_cpu() {
    let _memory = gpu::exclusive_device_memory();
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let devices = DeviceMutex::all().expect("the shared devices");
    release_resident_keys();
    let mut rng = fresh_rng();
    let steps = (1 << 16) - 3;
    let (key, _) = field_heavy(steps, &mut rng);
    let circuits: Vec<_> = (0..3)
        .map(|_| circuit_of(steps, Scalar::random(&mut rng)))
        .collect();
    let r_s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
    let s_s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut rng)).collect();
    // Half the key's points and one proof's memory free: too little to
    // upload it, enough for chunks (and the H polynomial on the CPU).
    let left = GpuProvingKey::required_bytes(&key) / 2;
    let before: u64 = proofs_by_device().iter().sum();
    let reservations = leave_free(devices, left);
    let proofs = create_proof_batch(circuits.clone(), &key, r_s.clone(), s_s.clone());
    let made = proofs_by_device().iter().sum::<u64>() - before;
    let kept = resident_keys();
    drop(reservations);
    println!(
        "3 streamed proofs with {} MiB free: {made} on the devices",
        left >> 20
    );
    assert_eq!(made, 3, "every proof on a device, none on the CPU");
    assert_eq!(kept, 0, "no key resident");
    for (k, proof) in proofs.expect("streamed proofs").iter().enumerate() {
        let assignment = synthesize(circuits[k].clone()).unwrap();
        let expected = prove(&key, &assignment, r_s[k], s_s[k]).unwrap();
        assert_eq!(proof, &expected, "proof {k}");
    }
}

#[test]
fn a_pool_streams_a_key_its_device_cannot_hold() {
    let _memory = gpu::exclusive_device_memory();
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let devices = DeviceMutex::all().expect("the shared devices");
    let mut rng = fresh_rng();
    let steps = (1 << 15) - 3;
    let (key, _) = field_heavy(steps, &mut rng);
    let key = Arc::new(key);
    let circuits: Vec<_> = (0..2)
        .map(|_| circuit_of(steps, Scalar::random(&mut rng)))
        .collect();
    let (r_s, s_s): (Vec<Scalar>, Vec<Scalar>) = (0..2)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .unzip();
    let pool = ProverPool::gpus(&[0]).unwrap();
    let reservations = leave_free(&devices[..1], GpuProvingKey::required_bytes(&key) / 2);
    let proofs = pool.prove_circuits(&key, None, circuits.clone(), r_s.clone(), s_s.clone());
    drop(reservations);
    let stats = &pool.stats()[0];
    println!(
        "pool, key streamed: {} proofs, {} key uploads, {} MiB crossed, {} failures",
        stats.proofs,
        stats.key_uploads,
        stats.bytes_uploaded >> 20,
        stats.failures
    );
    assert_eq!((stats.proofs, stats.key_uploads, stats.failures), (2, 0, 0));
    // FieldHeavy: a row per step and one per public input (two).
    let inputs = 3 * 32 * (steps as u64 + 2).next_power_of_two();
    assert_eq!(
        stats.bytes_uploaded,
        2 * (GpuProvingKey::points_bytes(&key) + inputs),
        "each proof moves the key's points and its a, b, c"
    );
    for (k, proof) in proofs.expect("pool proofs").iter().enumerate() {
        let assignment = synthesize(circuits[k].clone()).unwrap();
        assert_eq!(
            proof,
            &prove(&key, &assignment, r_s[k], s_s[k]).unwrap(),
            "proof {k}"
        );
    }
}
