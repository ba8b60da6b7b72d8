//! MSMs on every CUDA device run with explicit tunings (`MsmTuning`: chunk
//! cap, first-level threads, G2 layouts), against blstrs: the paths
//! 2^24-point and larger MSMs take, at sizes a test can check; and two
//! threads on one device each running their own tuning. A tuning holds for
//! the calls it is passed to alone, so these tests share the device with
//! the rest. Prints `skipped: no CUDA device` where there is none. The seed
//! is printed so a failure can be replayed.
#![cfg(feature = "cuda")]

#[path = "common/gpu.rs"]
mod gpu;
#[path = "common/msm_inputs.rs"]
mod msm_inputs;

use blstrs::{G1Affine, G2Affine};
use gpu::shared_device_memory;
use groth16_gpu::backend::cuda::{msm_g1_tuned, G2FirstLevel, MsmTiming, MsmTuning, ResidentBases};
use groth16_gpu::device::{DeviceGuard, DeviceMutex};
use msm_inputs::{
    awkward_bases, expected_g1, expected_g2, random_bases, random_scalars, seeded, special_scalars,
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

impl KnobCase {
    /// Runs both resident sets' later MSMs as `tuning` says.
    fn set_tuning(&mut self, tuning: MsmTuning) {
        self.resident.set_tuning(tuning);
        self.resident_g2.set_tuning(tuning);
    }
}

/// Runs `check` on each device with a KnobCase.
fn on_each_device_with_knobs(check: impl Fn(&DeviceGuard<'_>, &mut KnobCase, &mut ChaCha20Rng)) {
    let _memory = shared_device_memory();
    let Some(devices) = gpu::devices_or_skip() else {
        return;
    };
    let mut rng = seeded();
    let n = (1 << 16) + 7;
    let g1 = random_bases::<G1Affine>(n, &mut rng);
    let g2 = random_bases::<G2Affine>(n, &mut rng);
    for device in devices {
        let guard = device.lock();
        let mut case = KnobCase {
            resident: ResidentBases::upload(&guard, &g1).expect("upload G1"),
            resident_g2: ResidentBases::upload(&guard, &g2).expect("upload G2"),
            g1: g1.clone(),
            g2: g2.clone(),
        };
        check(&guard, &mut case, &mut rng);
    }
}

fn chunk_cap(points: usize) -> MsmTuning {
    MsmTuning {
        chunk_cap: Some(points),
        ..MsmTuning::default()
    }
}

/// MSMs split into chunks (how sets larger than free memory, or of 2^27
/// points, run): chunks that do not divide the points, a one-point last
/// chunk, ranges, indexed subsets and special scalars, G1 and G2.
#[test]
fn gpu_msm_in_many_chunks_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        let n = case.g1.len();
        let scalars = random_scalars(n, rng);
        let want = expected_g1(&case.g1, &scalars);
        let want_g2 = expected_g2(&case.g2, &scalars);
        // 4096 splits n into 17 chunks, the last of 7 points; n - 1 leaves
        // a last chunk of one point.
        for cap in [4096, 10_000, n - 1] {
            let tuning = chunk_cap(cap);
            let (got, timing) = msm_g1_tuned(guard, &case.g1, &scalars, &tuning).unwrap();
            assert_eq!(got, want, "G1, cap {cap}");
            assert_eq!(timing.run.chunks as usize, n.div_ceil(cap), "G1, cap {cap}");
            case.set_tuning(tuning);
            let (got, timing) = case.resident.msm_timed(guard, &scalars).unwrap();
            assert_eq!(got, want, "staged G1, cap {cap}");
            assert_eq!(
                timing.run.chunks as usize,
                n.div_ceil(cap),
                "staged, cap {cap}"
            );
            assert_eq!(
                case.resident_g2.msm(guard, &scalars).unwrap(),
                want_g2,
                "G2, cap {cap}"
            );
            assert_eq!(
                case.resident
                    .msm_range_direct(guard, 100, &scalars[100..])
                    .unwrap(),
                expected_g1(&case.g1[100..], &scalars[100..]),
                "G1 range, cap {cap}"
            );
        }
        case.set_tuning(chunk_cap(1000));
        for (name, special) in special_scalars(5000, rng) {
            assert_eq!(
                case.resident.msm(guard, &special).unwrap(),
                expected_g1(&case.g1[..5000], &special),
                "chunked {name}"
            );
        }
        check_indexed(
            guard,
            &case.resident,
            &case.g1,
            6000,
            rng,
            "chunked indexed",
        );
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
            let tuning = MsmTuning {
                g2_first_level: Some(layout),
                ..MsmTuning::default()
            };
            check_g2_first_level(guard, case, rng, tuning);
        }
    });
}

/// One layout's G2 checks for gpu_msm_g2_in_every_first_level_layout.
fn check_g2_first_level(
    guard: &DeviceGuard<'_>,
    case: &mut KnobCase,
    rng: &mut ChaCha20Rng,
    layout: MsmTuning,
) {
    let n = case.g2.len();
    let mut cases = special_scalars(n, rng);
    cases.push(("random", random_scalars(n, rng)));
    case.set_tuning(layout);
    for (name, scalars) in &cases {
        let (got, timing) = case.resident_g2.msm_timed(guard, scalars).unwrap();
        assert_eq!(got, expected_g2(&case.g2, scalars), "{layout:?}, {name}");
        assert_eq!(timing.run.g2_first_level, layout.g2_first_level);
    }
    let (_, scalars) = &cases[cases.len() - 1];
    let want = expected_g2(&case.g2, scalars);
    for threads in [10_000, 100] {
        case.set_tuning(MsmTuning {
            first_level_threads: Some(threads),
            ..layout
        });
        let got = case.resident_g2.msm(guard, scalars).unwrap();
        assert_eq!(got, want, "{layout:?}, {threads} threads");
    }
    case.set_tuning(MsmTuning {
        chunk_cap: Some(10_000),
        ..layout
    });
    assert_eq!(
        case.resident_g2.msm(guard, scalars).unwrap(),
        want,
        "{layout:?}, chunks"
    );
    let awkward = awkward_bases::<G2Affine>(4099, rng);
    let resident = ResidentBases::upload(guard, &awkward)
        .unwrap()
        .with_tuning(layout);
    let scalars = random_scalars(awkward.len(), rng);
    assert_eq!(
        resident.msm(guard, &scalars).unwrap(),
        expected_g2(&awkward, &scalars),
        "{layout:?}, awkward bases"
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
        for (threads, block) in [(40_000, 32), (10_000, 128), (100, 512)] {
            case.set_tuning(MsmTuning {
                first_level_threads: Some(threads),
                ..MsmTuning::default()
            });
            let (got, timing) = case.resident_g2.msm_timed(guard, &scalars).unwrap();
            assert_eq!(got, want_g2, "G2, {threads} threads");
            assert_eq!(timing.run.first_block, block, "G2, {threads} threads");
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

/// The widest windows a tuning may force (2^27-point MSMs' choice), where
/// most of a set's 2^19 or 2^21 buckets stay empty at a test's size and the
/// top window's few buckets hold many entries: random and special scalars,
/// in one chunk and in several, G1 and G2.
#[test]
fn gpu_msm_in_wide_windows_matches_blstrs() {
    on_each_device_with_knobs(|guard, case, rng| {
        let n = case.g1.len();
        let scalars = random_scalars(n, rng);
        let want = expected_g1(&case.g1, &scalars);
        let want_g2 = expected_g2(&case.g2, &scalars);
        for (bits, cap) in [(19, None), (20, None), (20, Some(20_000)), (22, None)] {
            let tuning = MsmTuning {
                window_bits: Some(bits),
                chunk_cap: cap,
                ..MsmTuning::default()
            };
            case.set_tuning(tuning);
            let (got, timing) = case.resident.msm_timed(guard, &scalars).unwrap();
            assert_eq!(got, want, "G1, c = {bits}, cap {cap:?}");
            assert_eq!(timing.run.window_bits, bits);
            assert_eq!(
                case.resident_g2.msm(guard, &scalars).unwrap(),
                want_g2,
                "G2, c = {bits}, cap {cap:?}"
            );
            for (name, special) in special_scalars(5000, rng) {
                assert_eq!(
                    case.resident.msm(guard, &special).unwrap(),
                    expected_g1(&case.g1[..5000], &special),
                    "{name}, c = {bits}"
                );
            }
        }
    });
}

/// Two threads taking turns on device 0 (its one lock, `DeviceMutex::get`),
/// each with its own base set run by its own tuning (chunks, window bits,
/// G2's layout): every sum right and every call's report its own thread's
/// settings, however the turns interleave.
#[test]
fn gpu_two_threads_on_one_device_each_run_their_own_tuning() {
    let _memory = shared_device_memory();
    if gpu::devices_or_skip().is_none() {
        return;
    }
    let device = DeviceMutex::get(0).expect("device 0");
    let mut rng = seeded();
    let n = 30_000;
    let g2 = random_bases::<G2Affine>(n, &mut rng);
    let scalars = random_scalars(n, &mut rng);
    let want = expected_g2(&g2, &scalars);
    let tunings = [
        MsmTuning {
            chunk_cap: Some(4096),
            window_bits: Some(11),
            g2_first_level: Some(G2FirstLevel::WholePoints),
            ..MsmTuning::default()
        },
        MsmTuning {
            chunk_cap: Some(12_000),
            window_bits: Some(14),
            g2_first_level: Some(G2FirstLevel::Pairs),
            ..MsmTuning::default()
        },
    ];
    std::thread::scope(|scope| {
        let (g2, scalars) = (&g2, &scalars);
        let threads: Vec<_> = tunings
            .into_iter()
            .map(|tuning| {
                scope.spawn(move || {
                    let resident = ResidentBases::upload(&device.lock(), g2)
                        .expect("upload G2")
                        .with_tuning(tuning);
                    for round in 0..4 {
                        let (got, timing) = resident.msm_timed(&device.lock(), scalars).unwrap();
                        assert_eq!(got, want, "{tuning:?}, round {round}");
                        check_run(&timing, &tuning, n);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    });
}

/// That `timing` reports the chunks, window bits and G2 layout `tuning`
/// asked for, over `n` points.
fn check_run(timing: &MsmTiming, tuning: &MsmTuning, n: usize) {
    let run = &timing.run;
    assert_eq!(run.chunks as usize, n.div_ceil(tuning.chunk_cap.unwrap()));
    assert_eq!(Some(run.window_bits), tuning.window_bits);
    assert_eq!(run.g2_first_level, tuning.g2_first_level);
    assert_eq!(
        run.pair_reduction,
        tuning.g2_first_level != Some(G2FirstLevel::WholePoints)
    );
}
