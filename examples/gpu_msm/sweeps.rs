//! The sweeps of the gpu_msm example: MSM times at each window width, and
//! over bases with and without shifted copies.

use std::time::Instant;

use groth16_gpu::backend::cuda::{DeviceScalars, GpuCurve, MsmTuning, ResidentBases};
use groth16_gpu::device::{DeviceGuard, GpuError};
use group::Curve;

use super::{median, random_bases, random_scalars};

/// Point counts the window sweep times unless told: powers of two and the
/// just-below sizes a proof's dense MSMs have (n - 2 for n witness values).
pub const SWEEP_SIZES: [usize; 6] = [1 << 17, 1 << 18, 1 << 19, (1 << 20) - 2, 1 << 21, 1 << 22];
/// Window widths the sweep tries unless told.
pub const SWEEP_BITS: std::ops::RangeInclusive<u32> = 12..=18;

/// Device ms (median of 5, scalars on the device) of MSMs of each of
/// `sizes` points at each of `widths` (`tuning` with its window bits
/// forced), every result checked against the size's own choice; prints one
/// table row per size.
pub fn window_sweep<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    tuning: &MsmTuning,
    name: &str,
    sizes: &[usize],
    widths: &[u32],
) -> Result<(), GpuError>
where
    G::Curve: Curve<AffineRepr = G> + Send + Sync,
{
    let Some(&largest) = sizes.iter().max() else {
        return Ok(());
    };
    let started = Instant::now();
    let mut bases = ResidentBases::upload(guard, &random_bases::<G>(largest, 11))?;
    let scalars = random_scalars(largest, 12);
    let on_device = DeviceScalars::upload(guard, &scalars, largest)?;
    drop(scalars);
    eprintln!(
        "{name}: 2^{:.1} bases and scalars made and uploaded in {:.1} s",
        (largest as f64).log2(),
        started.elapsed().as_secs_f64()
    );
    for &n in sizes {
        bases.set_tuning(*tuning);
        let (want, chosen) = bases.msm_device_scalars(guard, &on_device, n)?;
        let mut cells = Vec::new();
        for &bits in widths {
            bases.set_tuning(MsmTuning {
                window_bits: Some(bits),
                ..*tuning
            });
            let mut times = Vec::new();
            for _ in 0..6 {
                let (got, timing) = bases.msm_device_scalars(guard, &on_device, n)?;
                assert_eq!(
                    got, want,
                    "{name} n={n}: c={bits} agrees with the chosen window"
                );
                times.push(f64::from(timing.device_ms));
            }
            times.remove(0); // warm-up
            cells.push(format!("{:.2}", median(times)));
        }
        println!(
            "| {name} {n} (chooses c={}) | {} |",
            chosen.window_bits,
            cells.join(" | ")
        );
    }
    Ok(())
}

/// Window widths the copies sweep makes copies for.
const COPY_SWEEP_BITS: [u32; 6] = [16, 18, 19, 20, 21, 22];

/// One column of the copies sweep: shifted copies for `bits`-bit windows,
/// `copies` of them (None: one per window).
#[derive(Clone, Copy)]
pub struct CopyColumn {
    bits: u32,
    copies: Option<u32>,
}

impl std::fmt::Display for CopyColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.copies {
            None => write!(f, "copies c={}", self.bits),
            Some(k) => write!(f, "{k} copies c={}", self.bits),
        }
    }
}

/// COPY_SWEEP_BITS, or the comma-separated columns in G16_COPY_SWEEP_BITS:
/// a width ("20": a copy per window) or a width and a count of copies
/// ("20x7"). One that does not parse is an error, so a typo cannot
/// silently shorten the sweep.
pub fn copy_sweep_columns() -> Result<Vec<CopyColumn>, String> {
    let Ok(list) = std::env::var("G16_COPY_SWEEP_BITS") else {
        return Ok(COPY_SWEEP_BITS
            .map(|bits| CopyColumn { bits, copies: None })
            .to_vec());
    };
    list.split(',')
        .map(|column| {
            let bad = || format!("G16_COPY_SWEEP_BITS: {column:?} is not BITS or BITSxCOPIES");
            let (bits, copies) = match column.trim().split_once('x') {
                Some((bits, copies)) => (bits, Some(copies.parse().map_err(|_| bad())?)),
                None => (column.trim(), None),
            };
            Ok(CopyColumn {
                bits: bits.parse().map_err(|_| bad())?,
                copies,
            })
        })
        .collect()
}

/// Device ms (median of 5, scalars on the device) of MSMs from 2^18 points
/// to 2^max_log over bases without copies (the size's own window) and with
/// copies for each of `columns`, each result checked against the
/// plain one; prints a row per size and one of the copies' making time.
pub fn copies_sweep<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    tuning: &MsmTuning,
    name: &str,
    max_log: u32,
    columns: &[CopyColumn],
) -> Result<(), GpuError>
where
    G::Curve: Curve<AffineRepr = G> + Send + Sync,
{
    let sizes: Vec<usize> = (18..=max_log)
        .step_by(2)
        .map(|log| if log == 20 { (1 << 20) - 2 } else { 1 << log })
        .collect();
    let largest = 1usize << max_log;
    let points = random_bases::<G>(largest, 11);
    let scalars = random_scalars(largest, 12);
    let on_device = DeviceScalars::upload(guard, &scalars, largest)?;
    let time = |bases: &ResidentBases<G>, n: usize| -> Result<(G::Curve, f64, u32), GpuError> {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..6 {
            let (sum, timing) = bases.msm_device_scalars(guard, &on_device, n)?;
            times.push(f64::from(timing.device_ms));
            last = Some((sum, timing.window_bits));
        }
        times.remove(0); // warm-up
        let (sum, bits) = last.expect("six runs");
        Ok((sum, median(times), bits))
    };
    let plain = ResidentBases::upload(guard, &points)?.with_tuning(*tuning);
    let mut rows = Vec::new();
    let mut wants = Vec::new();
    for &n in &sizes {
        let (want, ms, bits) = time(&plain, n)?;
        rows.push(vec![format!("{ms:.2} (c={bits})")]);
        wants.push(want);
    }
    drop(plain);
    let mut making = Vec::new();
    for &column in columns {
        let mut copied = ResidentBases::upload(guard, &points)?.with_tuning(*tuning);
        let started = Instant::now();
        copied.precompute_some(guard, Some(column.bits), column.copies)?;
        making.push(format!("{:.2} s", started.elapsed().as_secs_f64()));
        for (i, &n) in sizes.iter().enumerate() {
            let (sum, ms, _) = time(&copied, n)?;
            assert_eq!(sum, wants[i], "{name} n={n}: {column} agrees");
            rows[i].push(format!("{ms:.2}"));
        }
    }
    for (n, row) in sizes.iter().zip(&rows) {
        println!("| {name} {n} | {} |", row.join(" | "));
    }
    println!("| {name} copies made in | - | {} |", making.join(" | "));
    Ok(())
}
