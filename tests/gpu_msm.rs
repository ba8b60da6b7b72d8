//! MSM and batch addition of the CUDA backend against blstrs, on every
//! CUDA device; prints `skipped: no CUDA device` where there is none.
//! Inputs are fresh random values each run; the seed is printed so a
//! failure can be replayed. The host reference of the same arithmetic:
//! tests/msm_reference.rs; the knobs' paths: tests/gpu_msm_knobs.rs.
#![cfg(feature = "cuda")]

#[path = "common/env.rs"]
mod env;
#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use env::env_or;
use ff::Field;
use gpu::{exclusive_device_memory, shared_device_memory};
use groth16_gpu::backend::cuda::{
    batch_add_g1, batch_add_g2, is_pinned, msm_g1, msm_g2, pack_bits, reserve_device_memory,
    PinnedStaging, ResidentBases, ScalarUploader,
};
use msm_inputs::{
    awkward_bases, expected_g1, expected_g2, expected_selected, on_each_device, random_bases,
    random_scalars, seeded, special_scalars, with_stray_bits,
};
use rand::Rng;

const GPU_SIZES: [usize; 8] = [0, 1, 2, 3, 31, 1000, (1 << 16) + 7, 1 << 20];

/// The sizes to run: all of GPU_SIZES, or those up to G16_GPU_MSM_MAX_POINTS
/// (compute-sanitizer's racecheck is too slow for 2^20 points).
fn gpu_sizes() -> impl Iterator<Item = usize> {
    let max = env_or("G16_GPU_MSM_MAX_POINTS", usize::MAX);
    GPU_SIZES.into_iter().filter(move |&n| n <= max)
}

#[test]
fn gpu_msm_g1_matches_blstrs() {
    on_each_device(|guard, rng| {
        for n in gpu_sizes() {
            let bases = random_bases::<G1Affine>(n, rng);
            let scalars = random_scalars(n, rng);
            let got = msm_g1(guard, &bases, &scalars).expect("msm_g1");
            assert_eq!(got, expected_g1(&bases, &scalars), "G1 n={n}");
        }
        let bases = awkward_bases::<G1Affine>(1000, rng);
        for (name, scalars) in special_scalars(1000, rng) {
            let got = msm_g1(guard, &bases, &scalars).expect("msm_g1");
            assert_eq!(got, expected_g1(&bases, &scalars), "G1 {name}");
        }
    });
}

#[test]
fn gpu_msm_g2_matches_blstrs() {
    on_each_device(|guard, rng| {
        for n in gpu_sizes() {
            let bases = random_bases::<G2Affine>(n, rng);
            let scalars = random_scalars(n, rng);
            let got = msm_g2(guard, &bases, &scalars).expect("msm_g2");
            assert_eq!(got, expected_g2(&bases, &scalars), "G2 n={n}");
        }
        let bases = awkward_bases::<G2Affine>(1000, rng);
        for (name, scalars) in special_scalars(1000, rng) {
            let got = msm_g2(guard, &bases, &scalars).expect("msm_g2");
            assert_eq!(got, expected_g2(&bases, &scalars), "G2 {name}");
        }
    });
}

#[test]
fn gpu_batch_add_matches_blstrs() {
    on_each_device(|guard, rng| {
        for n in [0usize, 1, 3, 1000, (1 << 16) + 7] {
            let g1 = awkward_bases::<G1Affine>(n, rng);
            let g2 = awkward_bases::<G2Affine>(n, rng);
            for density in [0.0, 0.5, 1.0] {
                let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(density)).collect();
                let words = with_stray_bits(pack_bits(&bits), n);
                let got1 = batch_add_g1(guard, &g1, &words).expect("batch_add_g1");
                assert_eq!(got1, expected_selected(&g1, &bits), "G1 n={n} p={density}");
                let got2 = batch_add_g2(guard, &g2, &words).expect("batch_add_g2");
                assert_eq!(got2, expected_selected(&g2, &bits), "G2 n={n} p={density}");
            }
        }
        // Sparse and nearly full bitmaps: one thread's run of selected bases
        // spans many words, or skips a single one.
        let g1 = awkward_bases::<G1Affine>((1 << 16) + 7, rng);
        for density in [0.003, 0.01, 0.99] {
            let bits: Vec<bool> = (0..g1.len()).map(|_| rng.gen_bool(density)).collect();
            let words = with_stray_bits(pack_bits(&bits), g1.len());
            let got = batch_add_g1(guard, &g1, &words).expect("batch_add_g1");
            assert_eq!(got, expected_selected(&g1, &bits), "G1 sparse p={density}");
        }
    });
}

/// Batch additions launched right after their bases' upload, many times:
/// the kernels must see the uploaded bases (the upload once returned before
/// its DMA landed, and a batch addition read stale device memory).
#[test]
fn gpu_batch_add_right_after_upload_sees_the_bases() {
    on_each_device(|guard, rng| {
        for n in [1000usize, 20_000] {
            for round in 0..24 {
                let bases = awkward_bases::<G1Affine>(n, rng);
                let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
                let got = batch_add_g1(guard, &bases, &pack_bits(&bits)).expect("batch_add_g1");
                assert_eq!(got, expected_selected(&bases, &bits), "n={n} round {round}");
            }
        }
    });
}

#[test]
fn gpu_resident_bases_serve_many_calls_and_prefixes() {
    on_each_device(|guard, rng| {
        let bases = random_bases::<G1Affine>(5000, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload");
        assert_eq!(
            (resident.len(), resident.ordinal()),
            (5000, guard.device().ordinal())
        );
        for n in [5000, 4097, 10, 0] {
            let scalars = random_scalars(n, rng);
            let got = resident.msm(guard, &scalars).expect("resident msm");
            assert_eq!(got, expected_g1(&bases[..n], &scalars), "prefix {n}");
        }
        assert!(resident.msm(guard, &random_scalars(5001, rng)).is_err());
        assert!(msm_g1(guard, &bases, &random_scalars(4999, rng)).is_err());
    });
}

/// An indexed MSM over a sparse subset of resident bases (what a witness of
/// mostly bits leaves to the bucket MSM): random subsets, repeated indices,
/// special scalars, the empty subset; an index past the bases is an error.
#[test]
fn gpu_indexed_msm_over_a_subset_of_resident_bases() {
    on_each_device(|guard, rng| {
        let bases = random_bases::<G1Affine>(20_000, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload");
        for (count, spread) in [(0usize, 20_000u32), (1, 20_000), (1000, 20_000), (5000, 7)] {
            let indices: Vec<u32> = (0..count).map(|_| rng.gen_range(0..spread)).collect();
            let scalars = random_scalars(count, rng);
            let got = resident
                .msm_indexed(guard, &scalars, &indices)
                .expect("indexed msm");
            let picked: Vec<G1Affine> = indices.iter().map(|&i| bases[i as usize]).collect();
            assert_eq!(got, expected_g1(&picked, &scalars), "{count} of {spread}");
        }
        let indices: Vec<u32> = (0..1000).map(|i| 19_999 - 3 * i).collect();
        let picked: Vec<G1Affine> = indices.iter().map(|&i| bases[i as usize]).collect();
        for (name, scalars) in special_scalars(1000, rng) {
            let got = resident.msm_indexed(guard, &scalars, &indices).unwrap();
            assert_eq!(got, expected_g1(&picked, &scalars), "indexed {name}");
        }
        let scalars = random_scalars(2, rng);
        let past_end = resident.msm_indexed(guard, &scalars, &[0, 20_000]);
        assert!(past_end.is_err(), "index past the bases accepted");
        assert!(resident.msm_indexed(guard, &scalars, &[0]).is_err());
        // The device still works after the refusals.
        let got = resident.msm_indexed(guard, &scalars, &[5, 5]).unwrap();
        assert_eq!(got, expected_g1(&[bases[5], bases[5]], &scalars));
        let g2 = random_bases::<G2Affine>(3000, rng);
        let resident_g2 = ResidentBases::upload(guard, &g2).expect("upload G2");
        let indices: Vec<u32> = (0..700).map(|_| rng.gen_range(0..3000)).collect();
        let scalars = random_scalars(700, rng);
        let picked: Vec<G2Affine> = indices.iter().map(|&i| g2[i as usize]).collect();
        let got = resident_g2.msm_indexed(guard, &scalars, &indices).unwrap();
        assert_eq!(got, expected_g2(&picked, &scalars), "G2 indexed");
    });
}

/// Host scalars staged through pinned slots land whole and in order
/// (slots smaller than the set, a partial last piece, zeros past it, slots
/// reused); MSMs of a range of the bases from staged, pinned and ordinary
/// memory (and the direct path) equal blstrs, also when two threads share
/// one base set's slots.
#[test]
fn gpu_staged_scalars_land_whole() {
    on_each_device(|guard, rng| {
        let values = random_scalars(4567, rng);
        let mut uploader = ScalarUploader::with_piece(guard, 1000).expect("upload slots");
        assert_eq!(uploader.ordinal(), guard.device().ordinal());
        for _ in 0..2 {
            let on_device = uploader.upload(guard, &values, 5000).expect("upload");
            let back = on_device.download(guard, 5000).unwrap();
            assert_eq!(&back[..4567], &values[..]);
            assert!(back[4567..].iter().all(|s| *s == Scalar::ZERO));
        }
        let none = uploader.upload(guard, &[], 3).unwrap();
        assert_eq!(none.download(guard, 3).unwrap(), vec![Scalar::ZERO; 3]);

        // At least the size from which ResidentBases stages its scalars.
        let n = (1 << 16) + 5;
        let bases = random_bases::<G1Affine>(n + 9, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload bases");
        let scalars = random_scalars(n, rng);
        let want = expected_g1(&bases[9..], &scalars);
        assert!(!is_pinned(&scalars));
        assert_eq!(
            resident.msm_range(guard, 9, &scalars).unwrap(),
            want,
            "staged"
        );
        assert_eq!(
            resident.msm_range_direct(guard, 9, &scalars).unwrap(),
            want,
            "copied by the driver"
        );
        assert!(resident.msm_range_direct(guard, 10, &scalars).is_err());
        let mut pinned = PinnedStaging::new(n).expect("pinned memory");
        pinned.as_mut_slice().copy_from_slice(&scalars);
        assert!(is_pinned(pinned.as_mut_slice()));
        assert_eq!(
            resident.msm_range(guard, 9, pinned.as_mut_slice()).unwrap(),
            want,
            "from pinned memory"
        );
        // Two lanes of one device on one base set: see
        // src/backend/cuda/lane_tests.rs (lanes are crate-private).

        let g2 = random_bases::<G2Affine>(n, rng);
        let resident_g2 = ResidentBases::upload(guard, &g2).expect("upload G2 bases");
        assert_eq!(
            resident_g2.msm(guard, &scalars).unwrap(),
            expected_g2(&g2, &scalars),
            "G2 staged"
        );
    });
}

/// Bases resident on one device refuse another device's guard, by the
/// staged path (large scalar sets) as by the driver's, and still serve
/// their own device afterwards.
#[test]
fn gpu_resident_bases_refuse_another_devices_guard() {
    let _memory = shared_device_memory();
    let Some(devices) = gpu::two_devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    let n = (1 << 16) + 1;
    let bases = random_bases::<G1Affine>(n, &mut rng);
    let scalars = random_scalars(n, &mut rng);
    let resident = ResidentBases::upload(&devices[0].lock(), &bases).expect("upload");
    let other = devices[1].lock();
    assert!(resident.msm(&other, &scalars).is_err(), "staged");
    assert!(
        resident.msm(&other, &scalars[..1000]).is_err(),
        "driver's path"
    );
    drop(other);
    assert_eq!(
        resident.msm(&devices[0].lock(), &scalars).unwrap(),
        expected_g1(&bases, &scalars)
    );
}

/// MSMs and batch additions over a range of the resident bases (what one
/// device's part of an MSM split over devices is): the parts of a split
/// add up to the whole, in G1 and G2; a range past the bases is an error.
#[test]
fn gpu_ranges_of_resident_bases_add_up_to_the_whole() {
    on_each_device(|guard, rng| {
        let n = 10_000 + 7;
        let bases = random_bases::<G1Affine>(n, rng);
        let resident = ResidentBases::upload(guard, &bases).expect("upload");
        let scalars = random_scalars(n, rng);
        let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.5)).collect();
        let words = pack_bits(&bits);
        for (first, end) in [
            (0, n),
            (64, 64),
            (0, 1),
            (4096, n),
            (128, 6400),
            (n / 64 * 64, n),
        ] {
            let got = resident
                .msm_range(guard, first, &scalars[first..end])
                .expect("range msm");
            let want = expected_g1(&bases[first..end], &scalars[first..end]);
            assert_eq!(got, want, "msm over {first}..{end}");
            // Bits past the range in its last word belong to the next range.
            let got = resident
                .batch_add_range(guard, first, &words[first / 64..], end - first)
                .expect("range batch add");
            let want = expected_selected(&bases[first..end], &bits[first..end]);
            assert_eq!(got, want, "batch addition over {first}..{end}");
        }
        let whole = expected_g1(&bases, &scalars);
        let parts = [(0, 3008), (3008, 6400), (6400, n)].map(|(first, end)| {
            resident
                .msm_range(guard, first, &scalars[first..end])
                .unwrap()
        });
        assert_eq!(parts.into_iter().sum::<G1Projective>(), whole);
        assert!(resident.msm_range(guard, n - 3, &scalars[..4]).is_err());
        assert!(resident.batch_add_range(guard, n, &words, 1).is_err());
        assert!(resident
            .msm_range(guard, usize::MAX, &scalars[..1])
            .is_err());

        let g2 = random_bases::<G2Affine>(3000, rng);
        let resident_g2 = ResidentBases::upload(guard, &g2).expect("upload G2");
        let scalars = random_scalars(3000, rng);
        let got = resident_g2
            .msm_range(guard, 1024, &scalars[1024..2500])
            .unwrap();
        assert_eq!(got, expected_g2(&g2[1024..2500], &scalars[1024..2500]));
        let got = resident_g2
            .batch_add_range(guard, 1024, &words[16..], 1976)
            .unwrap();
        assert_eq!(got, expected_selected(&g2[1024..], &bits[1024..3000]));
    });
}

#[test]
fn gpu_request_too_large_for_memory_is_an_error_and_device_stays_usable() {
    let _memory = exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    for device in devices {
        let guard = device.lock();
        let n = 1 << 16;
        let bases = random_bases::<G1Affine>(n, &mut rng);
        let scalars = random_scalars(n, &mut rng);
        let want = expected_g1(&bases, &scalars);
        let resident = ResidentBases::upload(&guard, &bases).expect("upload");
        // A reservation of all memory is itself refused, cleanly.
        let total = guard.device().total_memory();
        assert!(reserve_device_memory(&guard, total * 2).is_err());
        // Leave the device 4 MiB: bases (6 MiB) cannot be uploaded again and
        // the MSM either fits in small chunks or is refused, never crashes.
        let free = guard.device().free_memory().expect("free memory");
        let hog = reserve_device_memory(&guard, free - (4 << 20)).expect("reserve");
        println!("holding {} of {} bytes", hog.bytes(), total);
        let upload = ResidentBases::upload(&guard, &bases);
        assert!(
            matches!(&upload, Err(e) if e.is_out_of_memory()),
            "{:?}",
            upload.as_ref().err()
        );
        match resident.msm(&guard, &scalars) {
            Ok(got) => assert_eq!(got, want, "chunked MSM under memory pressure"),
            Err(error) => {
                println!("refused under pressure: {error}");
                assert!(error.is_out_of_memory(), "{error}");
            }
        }
        drop(hog);
        assert_eq!(
            resident.msm(&guard, &scalars).expect("msm after release"),
            want
        );
        assert_eq!(
            msm_g1(&guard, &bases, &scalars).expect("msm_g1 after release"),
            want
        );
    }
}
