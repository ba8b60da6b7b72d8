//! Shifted copies of resident bases (`ResidentBases::precompute`) against
//! blstrs on every CUDA device (tests print `skipped: no CUDA device` where
//! there is none); `copies_reference.rs` checks the same sums on the CPU.
#![cfg(feature = "cuda")]

#[path = "common/circuits.rs"]
mod circuits;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{G1Affine, G2Affine, Scalar};
use circuits::FieldHeavy;
use ff::Field;
use gpu::exclusive_device_memory;
use groth16_gpu::backend::cuda::{
    copies_from, pack_bits, reserve_device_memory, G2FirstLevel, GpuCurve, MsmTuning, ResidentBases,
};
use groth16_gpu::device::DeviceGuard;
use groth16_gpu::generate_parameters_for_shape_random;
use groth16_gpu::groth16::gpu::{prove_on_device, GpuProvingKey, ShiftedCopies};
use groth16_gpu::groth16::prove;
use groth16_gpu::synthesis::CircuitShape;
use msm_inputs::{
    awkward_bases, expected_g1, expected_g2, expected_selected, on_each_device,
    ones_in_every_window, random_bases, random_scalars, seeded, special_scalars,
};
use rand::Rng;

/// blstrs' Σ scalars[i] bases[indices[i]].
fn expected_indexed(
    bases: &[G1Affine],
    scalars: &[Scalar],
    indices: &[u32],
) -> blstrs::G1Projective {
    let picked: Vec<G1Affine> = indices.iter().map(|&i| bases[i as usize]).collect();
    expected_g1(&picked, scalars)
}

/// `bases` uploaded to the guard's device with their shifted copies for
/// `bits`-bit windows (None: the size's choice).
fn with_copies<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    bases: &[G],
    bits: Option<u32>,
) -> ResidentBases<G>
where
    G::Curve: Send + Sync,
{
    let mut resident = ResidentBases::upload(guard, bases).unwrap();
    resident.precompute(guard, bits).unwrap();
    resident
}

#[test]
fn gpu_msm_through_copies_matches_blstrs() {
    on_each_device(|guard, rng| {
        // Above the size from which MSMs go through the copies, with room
        // for a range that starts past the first base.
        let extra = 1000;
        let n = copies_from() + 77;
        let bases = awkward_bases::<G1Affine>(n + extra, rng);
        for bits in [None, Some(20)] {
            let resident = with_copies(guard, &bases, bits);
            assert!(resident.copies() > 1);
            assert_eq!(resident.copy_bits(), Some(bits.unwrap_or(16)));
            assert_eq!(
                resident.device_bytes(),
                ResidentBases::<G1Affine>::copies_bytes(bases.len(), bits).unwrap()
            );
            let scalars = random_scalars(n, rng);
            let (sum, timing) = resident.msm_timed(guard, &scalars).unwrap();
            assert_eq!(
                sum,
                expected_g1(&bases[..n], &scalars),
                "copies for {bits:?}"
            );
            assert_eq!(
                timing.window_bits,
                resident.copy_bits().unwrap() * resident.copies()
            );
            for (name, scalars) in special_scalars(n, rng) {
                assert_eq!(
                    resident.msm(guard, &scalars).unwrap(),
                    expected_g1(&bases[..n], &scalars),
                    "{name}, copies for {bits:?}"
                );
            }
            let heavy = vec![ones_in_every_window(4); n];
            assert_eq!(
                resident.msm(guard, &heavy).unwrap(),
                expected_g1(&bases[..n], &heavy),
                "one digit in every window"
            );
            // A range past the first base, and a sparse subset with repeats.
            assert_eq!(
                resident.msm_range(guard, extra, &scalars).unwrap(),
                expected_g1(&bases[extra..], &scalars)
            );
            let indices: Vec<u32> = (0..n)
                .map(|_| rng.gen_range(0..bases.len() as u32))
                .collect();
            assert_eq!(
                resident.msm_indexed(guard, &scalars, &indices).unwrap(),
                expected_indexed(&bases, &scalars, &indices)
            );
            // Below the copies' size the points serve alone; batch addition too.
            let few = &scalars[..1000];
            assert_eq!(
                resident.msm(guard, few).unwrap(),
                expected_g1(&bases[..1000], few)
            );
            let bits_set: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
            assert_eq!(
                resident.batch_add(guard, &pack_bits(&bits_set), n).unwrap(),
                expected_selected(&bases[..n], &bits_set)
            );
        }
    });
}

#[test]
fn gpu_msm_through_fewer_copies_matches_blstrs() {
    on_each_device(|guard, rng| {
        let n = copies_from() + 77;
        let bases = awkward_bases::<G1Affine>(n, rng);
        // 13 windows at 20 bits: two sets (7 copies), four (4), seven (2).
        for copies in [7, 4, 2] {
            let mut resident = ResidentBases::upload(guard, &bases).unwrap();
            resident
                .precompute_some(guard, Some(20), Some(copies))
                .unwrap();
            assert_eq!(resident.copies(), copies);
            assert_eq!(
                resident.device_bytes(),
                ResidentBases::<G1Affine>::bytes_of_copies(n, copies)
            );
            let scalars = random_scalars(n, rng);
            let (sum, timing) = resident.msm_timed(guard, &scalars).unwrap();
            assert_eq!(sum, expected_g1(&bases, &scalars), "{copies} copies");
            assert_eq!(timing.window_bits, 20 * copies);
            for (name, scalars) in special_scalars(n, rng) {
                assert_eq!(
                    resident.msm(guard, &scalars).unwrap(),
                    expected_g1(&bases, &scalars),
                    "{name}, {copies} copies"
                );
            }
            let heavy = vec![ones_in_every_window(4); n];
            assert_eq!(
                resident.msm(guard, &heavy).unwrap(),
                expected_g1(&bases, &heavy),
                "one digit in every window, {copies} copies"
            );
        }
        let g2_bases = awkward_bases::<G2Affine>(copies_from() + 5, rng);
        let mut g2 = ResidentBases::upload(guard, &g2_bases).unwrap();
        g2.precompute_some(guard, Some(16), Some(5)).unwrap();
        let scalars = random_scalars(g2_bases.len(), rng);
        assert_eq!(
            g2.msm(guard, &scalars).unwrap(),
            expected_g2(&g2_bases, &scalars)
        );
        let mut refused = ResidentBases::upload(guard, &bases[..1000]).unwrap();
        for copies in [1, 14] {
            assert!(
                refused
                    .precompute_some(guard, Some(20), Some(copies))
                    .is_err(),
                "{copies} copies"
            );
        }
        assert_eq!(refused.copies(), 1);
    });
}

#[test]
fn gpu_msm_through_copies_in_chunks_matches_blstrs() {
    on_each_device(|guard, rng| {
        let n = copies_from() + 3;
        let bases = random_bases::<G1Affine>(n, rng);
        let resident = with_copies(guard, &bases, None).with_tuning(MsmTuning {
            chunk_cap: Some(100_000),
            ..MsmTuning::default()
        });
        let scalars = random_scalars(n, rng);
        let (got, timing) = resident.msm_timed(guard, &scalars).unwrap();
        assert_eq!(got, expected_g1(&bases, &scalars));
        assert_eq!(timing.run.chunks as usize, n.div_ceil(100_000));
        assert_eq!(timing.run.copies, resident.copies());
    });
}

/// Blocks of sorted entries as long as a 2^24-point MSM's (up to 512 a
/// thread, several buckets' worth) at a test's size, through copies: awkward
/// bases, random and special scalars, one heavy bucket.
#[test]
fn gpu_msm_through_copies_in_long_blocks_matches_blstrs() {
    on_each_device(|guard, rng| {
        let n = copies_from() + 9;
        let bases = awkward_bases::<G1Affine>(n, rng);
        let resident = with_copies(guard, &bases, Some(16)).with_tuning(MsmTuning {
            first_level_threads: Some(2000),
            ..MsmTuning::default()
        });
        let mut cases = special_scalars(n, rng);
        cases.push(("random", random_scalars(n, rng)));
        for (name, scalars) in &cases {
            assert_eq!(
                resident.msm(guard, scalars).unwrap(),
                expected_g1(&bases, scalars),
                "{name}"
            );
        }
    });
}

#[test]
fn gpu_msm_g2_through_copies_matches_blstrs() {
    on_each_device(|guard, rng| {
        let n = copies_from() + 5;
        let bases = awkward_bases::<G2Affine>(n, rng);
        let mut resident = with_copies(guard, &bases, None);
        // Each point whole in a thread, then split over a pair of threads
        // (uncapped and held to 128 registers).
        for layout in G2FirstLevel::ALL {
            resident.set_tuning(MsmTuning {
                g2_first_level: Some(layout),
                ..MsmTuning::default()
            });
            let scalars = random_scalars(n, rng);
            assert_eq!(
                resident.msm(guard, &scalars).unwrap(),
                expected_g2(&bases, &scalars),
                "{layout:?}"
            );
            let (name, repeated) = special_scalars(n, rng).swap_remove(3);
            assert_eq!(
                resident.msm(guard, &repeated).unwrap(),
                expected_g2(&bases, &repeated),
                "{name}, {layout:?}"
            );
        }
    });
}

#[test]
fn gpu_copies_refuse_what_they_cannot_make() {
    let _memory = exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    let bases = random_bases::<G1Affine>(copies_from(), &mut rng);
    let scalars = random_scalars(bases.len(), &mut rng);
    let want = expected_g1(&bases, &scalars);
    for device in devices {
        let guard = device.lock();
        let mut resident = ResidentBases::upload(&guard, &bases).unwrap();
        for bits in [3, 25] {
            assert!(
                resident.precompute(&guard, Some(bits)).is_err(),
                "{bits} bits"
            );
        }
        // No room for the copies: an error, and the points serve as before.
        let free = guard.device().free_memory().unwrap();
        let needed = ResidentBases::<G1Affine>::copies_bytes(bases.len(), None).unwrap();
        let hold = free.saturating_sub(needed / 2);
        let reservation = reserve_device_memory(&guard, hold).unwrap();
        let error = resident.precompute(&guard, None).unwrap_err();
        assert!(
            error.to_string().contains("out of device memory"),
            "{error}"
        );
        assert_eq!(resident.copies(), 1);
        drop(reservation);
        assert_eq!(resident.msm(&guard, &scalars).unwrap(), want);
        // Copies once; a second time is refused and the first stay.
        resident.precompute(&guard, None).unwrap();
        assert!(resident.precompute(&guard, None).is_err());
        assert!(resident.copies() > 1);
        assert_eq!(resident.msm(&guard, &scalars).unwrap(), want);
    }
}

#[test]
fn gpu_key_with_shifted_copies_proves_the_same_bytes() {
    let _memory = exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    // Every query of this key holds about 2^18 points or more: all get copies.
    let steps = copies_from() + 16;
    let shape = CircuitShape::record(FieldHeavy { steps, start: None }).unwrap();
    let key = generate_parameters_for_shape_random(&shape, &mut rng).unwrap();
    let circuit = FieldHeavy {
        steps,
        start: Some(Scalar::random(&mut rng)),
    };
    let assignment = shape.synthesize(circuit).unwrap();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = prove(&key, &assignment, r, s).unwrap();
    for device in devices {
        let guard = device.lock();
        let plain = GpuProvingKey::upload_with(&guard, &key, ShiftedCopies::Never).unwrap();
        assert_eq!(plain.device_bytes(), GpuProvingKey::points_bytes(&key));
        let copied = GpuProvingKey::upload(&guard, &key).unwrap();
        // 16 copies of every set (16-bit windows below 2^20 points).
        assert_eq!(
            copied.device_bytes(),
            16 * plain.device_bytes(),
            "every set copied"
        );
        for resident in [&plain, &copied] {
            let (proof, _) = prove_on_device(&guard, resident, &assignment, r, s).unwrap();
            assert_eq!(proof.to_bytes(), cpu.to_bytes());
        }
        drop(copied);
        // A budget of a fifth of the copies: b_g2's and h's (twice the
        // bytes a copy of a's) do not fit, a's do, and then b_g1's and l's
        // no longer. Sets this small take no partial copies (their extra
        // bucket sets cost more than they save), so each set has all its
        // copies or none, and the proof is the same.
        let budget = 3 * plain.device_bytes();
        let within =
            GpuProvingKey::upload_with(&guard, &key, ShiftedCopies::WithinBytes(budget)).unwrap();
        assert!(within.device_bytes() > plain.device_bytes());
        assert!(within.device_bytes() <= plain.device_bytes() + budget);
        let (proof, _) = prove_on_device(&guard, &within, &assignment, r, s).unwrap();
        assert_eq!(proof.to_bytes(), cpu.to_bytes(), "some copies");
        drop(within);
        // Room for the points and a proof but not for copies: the key comes
        // without them, and proves the same. (A proof's lanes each hold an
        // MSM's bucket arrays, ~0.6 GB at 16-bit windows, however small its
        // chunks: 1 GB beside required_bytes was too little for four.)
        let free = guard.device().free_memory().unwrap();
        let room = GpuProvingKey::required_bytes(&key) + (4 << 30);
        let reservation = reserve_device_memory(&guard, free.saturating_sub(room)).unwrap();
        let squeezed = GpuProvingKey::upload(&guard, &key).unwrap();
        assert_eq!(squeezed.device_bytes(), plain.device_bytes());
        let (proof, _) = prove_on_device(&guard, &squeezed, &assignment, r, s).unwrap();
        assert_eq!(proof.to_bytes(), cpu.to_bytes());
        drop(reservation);
    }
}
