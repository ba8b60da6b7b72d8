//! GPU NTT benchmark: the H polynomial of a proof (three inverse NTTs,
//! three coset NTTs, the quotient and one inverse coset NTT, inputs already
//! on the device) and one coset NTT with its copies over PCIe, from 2^16
//! values up, fresh random inputs, device time by CUDA events (median of 5
//! after a warm-up).
//!
//!     cargo run --release --features cuda --example gpu_ntt -- [max_log] [min_log]

#[path = "common/gpu_bench.rs"]
mod gpu_bench;

use blstrs::Scalar;
use ff::Field;
use groth16_gpu::backend::cpu::Domain;
use groth16_gpu::backend::cuda::{ntt, HInputs, NttKind};
use groth16_gpu::device::{DeviceGuard, GpuError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

const REPEATS: usize = 5;

fn median(mut times: Vec<f32>) -> f32 {
    times.sort_by(f32::total_cmp);
    times[times.len() / 2]
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .map_init(
            || ChaCha20Rng::seed_from_u64(seed ^ rayon::current_thread_index().unwrap_or(0) as u64),
            |rng, _| Scalar::random(rng),
        )
        .collect()
}

/// Device ms of the H polynomial (upload not timed) and of a coset NTT
/// with its copies, each the median of REPEATS after one warm-up.
fn time_size(guard: &DeviceGuard<'_>, log: u32) -> Result<(f32, f32), GpuError> {
    let n = 1usize << log;
    let domain = Domain::new(n).map_err(|e| GpuError::Native(e.to_string()))?;
    let (a, b) = (random_scalars(n, 1), random_scalars(n, 2));
    let c: Vec<Scalar> = a.par_iter().zip(&b).map(|(a, b)| a * b).collect();
    let mut h_times = Vec::new();
    let mut ntt_times = Vec::new();
    for round in 0..=REPEATS {
        let inputs = HInputs::upload(guard, &domain, &a, &b, &c)?;
        let (_, h_ms) = inputs.compute(guard, &domain)?;
        let mut values = a.clone();
        let ntt_ms = ntt(guard, &mut values, NttKind::CosetForward)?;
        if round > 0 {
            h_times.push(h_ms);
            ntt_times.push(ntt_ms);
        }
    }
    Ok((median(h_times), median(ntt_times)))
}

fn main() -> Result<(), GpuError> {
    let args = gpu_bench::numeric_args();
    let max_log = args.first().copied().unwrap_or(24);
    let min_log = args.get(1).copied().unwrap_or(16);
    let Some(device) = gpu_bench::first_device_or_skip()? else {
        return Ok(());
    };
    let guard = device.lock();
    println!("| values | H polynomial ms (7 NTTs, on the device) | coset NTT ms (with copies) |");
    println!("|---|---|---|");
    for log in min_log..=max_log {
        let (h_ms, ntt_ms) = time_size(&guard, log)?;
        println!("| 2^{log} | {h_ms:.2} | {ntt_ms:.2} |");
    }
    Ok(())
}
