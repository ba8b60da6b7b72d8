//! MSMs on every CUDA device with the process-wide knobs set (chunk cap,
//! first-level threads, G2 layouts), against blstrs: the paths 2^24-point
//! and larger MSMs take, at sizes a test can check. Prints `skipped: no
//! CUDA device` where there is none. The seed is printed so a failure can
//! be replayed.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{G1Affine, G2Affine};
use gpu::exclusive_device_memory;
use groth16_gpu::backend::cuda::{msm_g1, G2FirstLevel, ResidentBases};
use groth16_gpu::device::DeviceGuard;
use msm_inputs::{
    awkward_bases, expected_g1, expected_g2, random_bases, random_scalars, seeded, special_scalars,
    Knob,
};
use rand::Rng;
use rand_chacha::ChaCha20Rng;

/// 2^16 + 7 random G1 and G2 bases, on the host and resident.
struct KnobCase {
    g1: Vec<G1Affine>,
    g2: Vec<G2Affine>,
    resident: ResidentBases<G1Affine>,
    resident_g2: ResidentBases<G2Affine>,
}

/// Runs `check` on each device with a KnobCase, holding the device memory
/// exclusively: a knob holds for every MSM in the process while it is set.
fn on_each_device_with_knobs(check: impl Fn(&DeviceGuard<'_>, &KnobCase, &mut ChaCha20Rng)) {
    let _memory = exclusive_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    let n = (1 << 16) + 7;
    let g1 = random_bases::<G1Affine>(n, &mut rng);
    let g2 = random_bases::<G2Affine>(n, &mut rng);
    for device in devices {
        let guard = device.lock();
        let case = KnobCase {
            resident: ResidentBases::upload(&guard, &g1).expect("upload G1"),
            resident_g2: ResidentBases::upload(&guard, &g2).expect("upload G2"),
            g1: g1.clone(),
            g2: g2.clone(),
        };
        check(&guard, &case, &mut rng);
    }
}

/// MSMs split into chunks (how sets larger than free memory, or of 2^27
/// points, run): chunks that do not divide the points, a one-point last
/// chunk, ranges, indexed subsets and special scalars, G1 and G2.
#[test]
fn gpu_msm_in_many_chunks_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        let KnobCase {
            g1,
            g2,
            resident,
            resident_g2,
        } = case;
        let n = g1.len();
        let scalars = random_scalars(n, rng);
        let want = expected_g1(g1, &scalars);
        let want_g2 = expected_g2(g2, &scalars);
        // 4096 splits n into 17 chunks, the last of 7 points; n - 1 leaves
        // a last chunk of one point.
        for cap in [4096, 10_000, n - 1] {
            let _cap = Knob::chunk_cap(cap);
            assert_eq!(msm_g1(guard, g1, &scalars).unwrap(), want, "G1, cap {cap}");
            assert_eq!(
                resident.msm(guard, &scalars).unwrap(),
                want,
                "staged G1, cap {cap}"
            );
            assert_eq!(
                resident_g2.msm(guard, &scalars).unwrap(),
                want_g2,
                "G2, cap {cap}"
            );
            assert_eq!(
                resident
                    .msm_range_direct(guard, 100, &scalars[100..])
                    .unwrap(),
                expected_g1(&g1[100..], &scalars[100..]),
                "G1 range, cap {cap}"
            );
        }
        let _cap = Knob::chunk_cap(1000);
        for (name, special) in special_scalars(5000, rng) {
            assert_eq!(
                resident.msm(guard, &special).unwrap(),
                expected_g1(&g1[..5000], &special),
                "chunked {name}"
            );
        }
        check_indexed(guard, resident, g1, 6000, rng, "chunked indexed");
    });
}

/// An MSM over `count` random picks (repeats likely) of the resident bases.
fn check_indexed(
    guard: &DeviceGuard<'_>,
    resident: &ResidentBases<G1Affine>,
    g1: &[G1Affine],
    count: usize,
    rng: &mut ChaCha20Rng,
    what: &str,
) {
    let indices: Vec<u32> = (0..count)
        .map(|_| rng.gen_range(0..g1.len() as u32))
        .collect();
    let picked: Vec<G1Affine> = indices.iter().map(|&i| g1[i as usize]).collect();
    let chosen = random_scalars(count, rng);
    assert_eq!(
        resident.msm_indexed(guard, &chosen, &indices).unwrap(),
        expected_g1(&picked, &chosen),
        "{what}"
    );
}

/// G2's first level in the layouts other than the default (pairs of
/// threads held to 128 registers, which every other G2 test runs), and so
/// its task levels and window reduction whole and over pairs: random,
/// special and awkward inputs (identity, repeated and negated bases),
/// blocks of 32 and 512, several chunks.
#[test]
fn gpu_msm_g2_in_every_first_level_layout_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        for layout in [G2FirstLevel::WholePoints, G2FirstLevel::Pairs] {
            let _layout = Knob::g2_first_level(layout);
            check_g2_first_level(guard, case, rng, &format!("{layout:?}"));
        }
    });
}

/// One layout's G2 checks for gpu_msm_g2_in_every_first_level_layout.
fn check_g2_first_level(
    guard: &DeviceGuard<'_>,
    case: &KnobCase,
    rng: &mut ChaCha20Rng,
    layout: &str,
) {
    let n = case.g2.len();
    let mut cases = special_scalars(n, rng);
    cases.push(("random", random_scalars(n, rng)));
    for (name, scalars) in &cases {
        assert_eq!(
            case.resident_g2.msm(guard, scalars).unwrap(),
            expected_g2(&case.g2, scalars),
            "{layout}, {name}"
        );
    }
    let (_, scalars) = &cases[cases.len() - 1];
    let want = expected_g2(&case.g2, scalars);
    for threads in [10_000, 100] {
        let _threads = Knob::first_level_threads(threads);
        let got = case.resident_g2.msm(guard, scalars).unwrap();
        assert_eq!(got, want, "{layout}, {threads} threads");
    }
    {
        let _cap = Knob::chunk_cap(10_000);
        assert_eq!(
            case.resident_g2.msm(guard, scalars).unwrap(),
            want,
            "{layout}, chunks"
        );
    }
    let awkward = awkward_bases::<G2Affine>(4099, rng);
    let resident = ResidentBases::upload(guard, &awkward).unwrap();
    let scalars = random_scalars(awkward.len(), rng);
    assert_eq!(
        resident.msm(guard, &scalars).unwrap(),
        expected_g2(&awkward, &scalars),
        "{layout}, awkward bases"
    );
}

/// Blocks of sorted entries from 32 up to 512 a thread (what 2^24-point
/// MSMs run), at sizes a test can check: G1 and G2, special scalars (one
/// bucket spanning many blocks among them) and an indexed subset with
/// repeats.
#[test]
fn gpu_msm_in_long_first_level_blocks_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        let n = case.g1.len();
        let scalars = random_scalars(n, rng);
        let want_g2 = expected_g2(&case.g2, &scalars);
        // n points in 13-bit windows (20 of them) make 1.31 M entries: a
        // threshold of 40,000 threads keeps blocks of 32, 10,000 gives 128
        // and 100 the longest, 512.
        for threads in [40_000, 10_000, 100] {
            let _threads = Knob::first_level_threads(threads);
            assert_eq!(
                case.resident_g2.msm(guard, &scalars).unwrap(),
                want_g2,
                "G2, {threads} threads"
            );
            for (name, special) in special_scalars(n, rng) {
                assert_eq!(
                    case.resident.msm(guard, &special).unwrap(),
                    expected_g1(&case.g1, &special),
                    "{name}, {threads} threads"
                );
            }
            let what = format!("indexed, {threads} threads");
            check_indexed(guard, &case.resident, &case.g1, n, rng, &what);
        }
    });
}
