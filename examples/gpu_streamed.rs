//! A key resident on the device against the same key streamed to it a
//! chunk at a time (how a key too large for the device proves), one
//! FieldHeavy proof from assignment to proof at each 2^N given (default
//! 16 20 22), best and median of $REPEATS (default 3) each way, both
//! checked to be the same proof. Without a device it prints that it
//! skipped.
//!
//! ```text
//! cargo run --release --features cuda --example gpu_streamed -- [N...]
//! ```

#[path = "../tests/common/circuits.rs"]
mod circuits;
#[path = "common/gpu_bench.rs"]
mod gpu_bench;

use std::time::{Duration, Instant};

use blstrs::Scalar;
use circuits::FieldHeavy;
use ff::Field;
use groth16_gpu::groth16::gpu::{prove_on_device, prove_streamed, GpuProvingKey};
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{generate_parameters_for_shape_random, Error, Proof};
use rand_core::OsRng;

/// The last proof of `repeats` runs of `prove`, and their times sorted.
fn timed(
    repeats: usize,
    prove: impl Fn() -> Result<Proof, Error>,
) -> Result<(Proof, Vec<Duration>), Error> {
    let mut times = Vec::with_capacity(repeats);
    let mut proof = None;
    for _ in 0..repeats {
        let start = Instant::now();
        proof = Some(prove()?);
        times.push(start.elapsed());
    }
    times.sort();
    Ok((proof.expect("at least one run"), times))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RUST_LOG=groth16_gpu=debug prints where each streamed MSM's time goes.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let repeats: usize = std::env::var("REPEATS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .max(1);
    let mut sizes = gpu_bench::numeric_args();
    if sizes.is_empty() {
        sizes = vec![16, 20, 22];
    }
    let Some(device) = gpu_bench::first_device_or_skip()? else {
        return Ok(());
    };
    let guard = device.lock();
    println!(
        "| 2^n | key MiB | resident best / median ms | streamed best / median ms | streamed / resident | key GB/s streamed |"
    );
    println!("|---|---|---|---|---|---|");
    for n in sizes {
        let steps = (1usize << n) - 2;
        let shape = CircuitShape::record(FieldHeavy { steps, start: None })?;
        let key = generate_parameters_for_shape_random(&shape, &mut OsRng)?;
        let assignment = shape.synthesize(FieldHeavy {
            steps,
            start: Some(Scalar::random(&mut OsRng)),
        })?;
        let (r, s) = (Scalar::random(&mut OsRng), Scalar::random(&mut OsRng));
        let (streamed, streamed_times) =
            timed(repeats, || prove_streamed(&guard, &key, &assignment, r, s))?;
        let key_bytes = GpuProvingKey::required_bytes(&key);
        let resident = GpuProvingKey::upload(&guard, &key)?;
        let (proof, resident_times) = timed(repeats, || {
            prove_on_device(&guard, &resident, &assignment, r, s).map(|(p, _)| p)
        })?;
        drop(resident);
        if proof != streamed {
            return Err(format!("2^{n}: the streamed proof differs from the resident one").into());
        }
        let (best, median) = (|t: &[Duration]| t[0], |t: &[Duration]| t[t.len() / 2]);
        println!(
            "| {n} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {:.2}x | {:.1} |",
            key_bytes >> 20,
            ms(best(&resident_times)),
            ms(median(&resident_times)),
            ms(best(&streamed_times)),
            ms(median(&streamed_times)),
            best(&streamed_times).as_secs_f64() / best(&resident_times).as_secs_f64(),
            key_bytes as f64 / best(&streamed_times).as_secs_f64() / 1e9
        );
    }
    Ok(())
}
