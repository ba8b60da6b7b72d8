//! GPU MSM and batch-addition benchmark: G1 and G2 MSM from 2^16 points up,
//! batch addition, bases resident on the device, fresh random scalars,
//! device time by CUDA events (median of repeats after a warm-up), blstrs
//! on the host CPUs beside it at the smaller sizes. Each MSM is timed with
//! its scalars in three places: ordinary host memory (a Vec; from 2^16
//! scalars the library stages them through pinned slots), pinned host
//! memory, and already on the device (the bucket method alone, without the
//! copy over PCIe).
//!
//!     cargo run --release --features cuda --example gpu_msm -- [max_log_g1] [max_log_g2] [min_log]
//!     cargo run --release --features cuda --example gpu_msm -- --window-sweep
//!
//! `--window-sweep` times MSMs of a few sizes at every window width from 12
//! to 18 bits instead (scalars on the device, medians of 5): the data behind
//! the window each size chooses. `--sweep-logs 24,27` sweeps G1 MSMs of
//! those powers of two instead (and G2 only with `--sweep-g2-logs`),
//! `--sweep-bits 16,20,22` those widths.
//!
//!     cargo run --release --features cuda --example gpu_msm -- --copies-sweep [max_log_g1] [max_log_g2]
//!
//! `--copies-sweep` times the same MSMs over bases without shifted copies
//! and with copies for each window width of COPY_SWEEP_BITS side by side
//! (scalars on the device, medians of 5), and how long making the copies
//! took: the data behind `ResidentBases::precompute`'s choice.
//! G16_COPY_SWEEP_BITS=16,20,20x7 picks the columns instead: a width (a copy
//! per window) or a width and a count of copies (fewer copies, more bucket
//! sets: what a key short of memory gets).
//!
//! The MSM tuning flags (`--msm-g2-first-level 1`, `--msm-inline-pieces 32`,
//! `--msm-phases`, ...; examples/common/tuning_flags.rs lists them) run
//! every MSM here with that `MsmTuning`, for sweeps; `--window-sweep`
//! forces each column's window bits over it.
//!
//! The floor column is the arithmetic floor: the Fp products the method must
//! do (G1: 10 per mixed addition, 14 per full one; G2: Fp2 products of 3 Fp
//! and squares of 2) at the rate the device's product allows on its
//! multiply pipe (docs/NOTES-msm.md has the derivation).

#[path = "common/flags.rs"]
mod flags;
#[path = "common/gpu_bench.rs"]
mod gpu_bench;
#[path = "gpu_msm/sweeps.rs"]
mod sweeps;
#[path = "common/tuning_flags.rs"]
mod tuning_flags;

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use groth16_gpu::backend::cuda::{
    pack_bits, DeviceScalars, GpuCurve, MsmTuning, PinnedStaging, ResidentBases,
};
use groth16_gpu::device::{DeviceGuard, GpuError};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use sweeps::{copies_sweep, copy_sweep_columns, window_sweep, SWEEP_BITS, SWEEP_SIZES};

/// Fp products per second at the H200's wide multiply-add rate, 6.51e12
/// IMAD.WIDE/s (scripts/probes/mul_rate.cu), over the 278 a product issues.
const FP_MULS_PER_S: f64 = 6.51e12 / 278.0;

/// Fp products of one addition on a curve: mixed (affine + XYZZ), full.
#[derive(Clone, Copy)]
struct AdditionCost {
    mixed: f64,
    full: f64,
}

/// 8 products and 2 squares mixed, 12 and 2 full (xyzz.cuh).
const G1_COST: AdditionCost = AdditionCost {
    mixed: 10.0,
    full: 14.0,
};
/// The same over Fp2: a product is 3 Fp products, a square 2.
const G2_COST: AdditionCost = AdditionCost {
    mixed: 8.0 * 3.0 + 2.0 * 2.0,
    full: 12.0 * 3.0 + 2.0 * 2.0,
};

fn random_bases<G: PrimeCurveAffine + Send + Sync>(n: usize, seed: u64) -> Vec<G>
where
    G::Curve: Curve<AffineRepr = G> + Send + Sync,
{
    let mut out = vec![G::identity(); n];
    out.par_chunks_mut(4096).enumerate().for_each(|(i, chunk)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ (i as u64) << 20);
        let step = G::Curve::random(&mut rng);
        let mut point = G::Curve::random(&mut rng);
        let projective: Vec<G::Curve> = (0..chunk.len())
            .map(|_| {
                point += step;
                point
            })
            .collect();
        G::Curve::batch_normalize(&projective, chunk);
    });
    out
}

/// Removes `flag` and its value, a comma-separated list of numbers, from
/// `args`.
fn take_list(args: &mut Vec<String>, flag: &str) -> Result<Option<Vec<u32>>, String> {
    let Some(at) = args.iter().position(|a| a == flag) else {
        return Ok(None);
    };
    let bad = || format!("{flag} takes a comma-separated list of numbers");
    let value = args.get(at + 1).ok_or_else(bad)?.clone();
    let list = value
        .split(',')
        .map(|v| v.trim().parse().map_err(|_| bad()))
        .collect::<Result<Vec<u32>, String>>()?;
    args.drain(at..=at + 1);
    Ok(Some(list))
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(4096).enumerate().for_each(|(i, chunk)| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ (i as u64) << 24);
        chunk.iter_mut().for_each(|s| *s = Scalar::random(&mut rng));
    });
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Arithmetic floor of a c-bit-window MSM of n points, in ms.
fn msm_floor_ms(n: usize, window_bits: u32, cost: AdditionCost) -> f64 {
    let windows = 256f64 / window_bits as f64;
    let buckets = windows * (1u64 << (window_bits - 1)) as f64;
    let muls = n as f64 * windows.ceil() * cost.mixed + 2.0 * buckets * cost.full;
    muls / FP_MULS_PER_S * 1e3
}

struct Row {
    what: String,
    gpu_ms: f64,
    /// Scalars in pinned host memory, and on the device (MSMs only).
    pinned_ms: Option<f64>,
    device_ms: Option<f64>,
    wall_ms: f64,
    floor_ms: f64,
    cpu_ms: Option<f64>,
}

#[allow(clippy::too_many_arguments)]
fn bench_msm<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    tuning: &MsmTuning,
    name: &str,
    logs: std::ops::RangeInclusive<u32>,
    cost: AdditionCost,
    cpu_up_to: u32,
    cpu: impl Fn(&[G], &[Scalar]) -> G::Curve,
    rows: &mut Vec<Row>,
) -> Result<(), GpuError>
where
    G::Curve: Curve<AffineRepr = G> + Send + Sync,
{
    let started = Instant::now();
    let bases = random_bases::<G>(1 << *logs.end(), 7);
    let resident = ResidentBases::upload(guard, &bases)?.with_tuning(*tuning);
    let sets: Vec<Vec<Scalar>> = (0..2)
        .map(|s| random_scalars(1 << *logs.end(), 100 + s))
        .collect();
    eprintln!(
        "{name}: inputs ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for log in logs.step_by(2) {
        let n = 1usize << log;
        let (want, _) = resident.msm_timed(guard, &sets[0][..n])?; // warm-up
        let repeats = if log >= 24 { 3 } else { 5 };
        let (mut gpu, mut wall) = (Vec::new(), Vec::new());
        let mut bits = 0;
        for r in 0..repeats {
            let start = Instant::now();
            let (got, timing) = resident.msm_timed(guard, &sets[r % 2][..n])?;
            wall.push(start.elapsed().as_secs_f64() * 1e3);
            gpu.push(f64::from(timing.device_ms));
            bits = timing.window_bits;
            if r % 2 == 0 {
                assert_eq!(got, want, "{name} 2^{log}: same scalars, same sum");
            }
        }
        let (pinned_ms, device_ms) = time_other_sources(guard, &resident, &sets[0][..n], &want)?;
        let cpu_ms = (log <= cpu_up_to).then(|| {
            let start = Instant::now();
            let sum = cpu(&bases[..n], &sets[0][..n]);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            assert_eq!(sum, want, "{name} 2^{log}: GPU and blstrs agree");
            ms
        });
        rows.push(Row {
            what: format!("{name} MSM 2^{log} (c={bits})"),
            gpu_ms: median(gpu),
            pinned_ms: Some(pinned_ms),
            device_ms: Some(device_ms),
            wall_ms: median(wall),
            floor_ms: msm_floor_ms(n, bits, cost),
            cpu_ms,
        });
    }
    Ok(())
}

/// Device ms (median of 3) of the same MSM with its scalars in pinned host
/// memory, then with them already on the device; both checked against `want`.
fn time_other_sources<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    resident: &ResidentBases<G>,
    scalars: &[Scalar],
    want: &G::Curve,
) -> Result<(f64, f64), GpuError> {
    let mut pinned = PinnedStaging::new(scalars.len())?;
    pinned.as_mut_slice().copy_from_slice(scalars);
    let on_device = DeviceScalars::upload(guard, scalars, scalars.len())?;
    let (mut from_pinned, mut from_device) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (got, timing) = resident.msm_timed(guard, pinned.as_mut_slice())?;
        assert_eq!(&got, want, "scalars from pinned memory");
        from_pinned.push(f64::from(timing.device_ms));
        let (got, timing) = resident.msm_device_scalars(guard, &on_device, scalars.len())?;
        assert_eq!(&got, want, "scalars on the device");
        from_device.push(f64::from(timing.device_ms));
    }
    Ok((median(from_pinned), median(from_device)))
}

fn main() -> Result<(), GpuError> {
    let (tuning, rest) = match tuning_flags::split_tuning_flags(std::env::args().skip(1).collect())
    {
        Ok(split) => split,
        Err(message) => {
            eprintln!("{message}\nMSM tuning: {}", tuning_flags::USAGE);
            std::process::exit(2);
        }
    };
    let tuning = &tuning.msm;
    let (mut rest, mut sweep_lists) = (rest, Vec::new());
    for flag in ["--sweep-logs", "--sweep-g2-logs", "--sweep-bits"] {
        match take_list(&mut rest, flag) {
            Ok(list) => sweep_lists.push(list),
            Err(message) => {
                eprintln!("{message}");
                std::process::exit(2);
            }
        }
    }
    let sweep = rest.iter().any(|a| a == "--window-sweep");
    let copies = rest.iter().any(|a| a == "--copies-sweep");
    let args: Vec<u32> = rest.iter().filter_map(|a| a.parse().ok()).collect();
    let max_g1 = args.first().copied().unwrap_or(24);
    let max_g2 = args.get(1).copied().unwrap_or(22);
    let min_log = args.get(2).copied().unwrap_or(16);
    let Some(device) = gpu_bench::first_device_or_skip()? else {
        return Ok(());
    };
    let guard = device.lock();
    if copies {
        let columns = match copy_sweep_columns() {
            Ok(bits) => bits,
            Err(message) => {
                eprintln!("{message}");
                std::process::exit(2);
            }
        };
        let header: Vec<String> = columns.iter().map(|c| format!("{c} ms")).collect();
        println!("| MSM, points | no copies ms | {} |", header.join(" | "));
        println!("|---|---|{}", "---|".repeat(header.len()));
        copies_sweep::<G1Affine>(&guard, tuning, "G1", max_g1, &columns)?;
        copies_sweep::<G2Affine>(&guard, tuning, "G2", max_g2, &columns)?;
        return Ok(());
    }
    if sweep {
        let [g1_logs, g2_logs, bits] = [0, 1, 2].map(|k| sweep_lists[k].take());
        let told = g1_logs.is_some() || g2_logs.is_some();
        let sizes = |logs: Option<Vec<u32>>| match logs {
            Some(logs) => logs.into_iter().map(|log| 1usize << log).collect(),
            None if told => Vec::new(),
            None => SWEEP_SIZES.to_vec(),
        };
        let widths = bits.unwrap_or_else(|| SWEEP_BITS.collect());
        let header: Vec<String> = widths.iter().map(|c| format!("c={c} ms")).collect();
        println!("| MSM, points | {} |", header.join(" | "));
        println!("|---|{}", "---|".repeat(header.len()));
        window_sweep::<G1Affine>(&guard, tuning, "G1", &sizes(g1_logs), &widths)?;
        window_sweep::<G2Affine>(&guard, tuning, "G2", &sizes(g2_logs), &widths)?;
        return Ok(());
    }
    let mut rows = Vec::new();

    bench_msm::<G1Affine>(
        &guard,
        tuning,
        "G1",
        min_log..=max_g1,
        G1_COST,
        20,
        |b, s| {
            let p: Vec<G1Projective> = b.par_iter().map(|x| x.to_curve()).collect();
            G1Projective::multi_exp(&p, s)
        },
        &mut rows,
    )?;

    // Batch addition over G1 bases, half the bits set.
    let log = max_g1.min(24);
    let n = 1usize << log;
    let bases = random_bases::<G1Affine>(n, 9);
    let resident = ResidentBases::upload(&guard, &bases)?;
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let bits: Vec<bool> = (0..n).map(|_| rng.next_u32() & 1 == 1).collect();
    let words = pack_bits(&bits);
    let want = resident.batch_add(&guard, &words, n)?;
    let (mut gpu, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let start = Instant::now();
        let (got, timing) = resident.batch_add_timed(&guard, &words, n)?;
        wall.push(start.elapsed().as_secs_f64() * 1e3);
        gpu.push(f64::from(timing.device_ms));
        assert_eq!(got, want);
    }
    let start = Instant::now();
    let cpu_sum = bases
        .par_iter()
        .zip(&bits)
        .filter(|(_, &b)| b)
        .fold(G1Projective::identity, |acc, (b, _)| acc + b)
        .reduce(G1Projective::identity, |a, b| a + b);
    let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
    assert_eq!(cpu_sum, want, "batch addition: GPU and blstrs agree");
    rows.push(Row {
        what: format!("G1 batch add 2^{log} (p=1/2)"),
        gpu_ms: median(gpu),
        pinned_ms: None,
        device_ms: None,
        wall_ms: median(wall),
        floor_ms: (n / 2) as f64 * G1_COST.mixed / FP_MULS_PER_S * 1e3,
        cpu_ms: Some(cpu_ms),
    });
    drop(resident);

    bench_msm::<G2Affine>(
        &guard,
        tuning,
        "G2",
        min_log..=max_g2,
        G2_COST,
        18,
        |b, s| {
            let p: Vec<G2Projective> = b.par_iter().map(|x| x.to_curve()).collect();
            G2Projective::multi_exp(&p, s)
        },
        &mut rows,
    )?;

    println!("\n| what | GPU ms (events) | scalars pinned | scalars on device | call ms (wall) | floor ms | x floor | blstrs CPU ms |");
    println!("|---|---|---|---|---|---|---|---|");
    let or_dash =
        |ms: Option<f64>, digits: usize| ms.map_or("-".to_string(), |ms| format!("{ms:.digits$}"));
    for row in &rows {
        println!(
            "| {} | {:.2} | {} | {} | {:.2} | {:.2} | {:.1} | {} |",
            row.what,
            row.gpu_ms,
            or_dash(row.pinned_ms, 2),
            or_dash(row.device_ms, 2),
            row.wall_ms,
            row.floor_ms,
            row.gpu_ms / row.floor_ms,
            or_dash(row.cpu_ms, 1)
        );
    }
    Ok(())
}
