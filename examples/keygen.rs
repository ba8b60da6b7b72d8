//! Proving keys generated on the GPU against the CPU generator: a table of
//! times by size, every GPU key compared byte for byte with the CPU's where
//! both run.
//!
//! ```text
//! cargo run --release --features cuda --example keygen -- \
//!     [--sizes 20,22,24] [--cpu-sizes 20,22,24] [--device N]
//! ```
//! For each size n: a field-heavy circuit of 2^n constraints (full field
//! witness values, so every query is dense) is recorded once (timed apart),
//! then keys are made from one trapdoor on the GPU and, for the sizes in
//! `--cpu-sizes`, on the host's cores. RUST_LOG=info prints each step's time
//! (window tables, powers of τ, the QAP at τ, each query).

#[path = "../tests/common/circuits.rs"]
mod circuits;
#[path = "common/flags.rs"]
mod flags;

use std::time::Instant;

use circuits::FieldHeavy;
use flags::Flags;
use groth16_gpu::device::{Device, DeviceMutex};
use groth16_gpu::generate_parameters_for_shape;
use groth16_gpu::params::{generate_parameters_for_shape_on_gpu, Trapdoor};
use groth16_gpu::synthesis::CircuitShape;
use rand_core::OsRng;

struct Options {
    sizes: Vec<u32>,
    cpu_sizes: Vec<u32>,
    device: usize,
}

fn sizes(text: &str) -> Result<Vec<u32>, String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|e| format!("size {s}: {e}")))
        .collect()
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        sizes: vec![20, 22, 24],
        cpu_sizes: vec![20, 22],
        device: 0,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--sizes" => options.sizes = sizes(&flags.value(&flag)?)?,
            "--cpu-sizes" => options.cpu_sizes = sizes(&flags.value(&flag)?)?,
            "--device" => options.device = flags.parsed(&flag)?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if let Some(n) = options.sizes.iter().find(|&&n| !(1..=28).contains(&n)) {
        return Err(format!("size {n} outside 1..=28"));
    }
    Ok(options)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .init();
    let options = parse_options().unwrap_or_else(|e| {
        eprintln!("{e}\nusage: keygen [--sizes 20,22,24] [--cpu-sizes 20,22] [--device N]");
        std::process::exit(2);
    });
    flags::exit_on_error(run(&options));
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    if Device::count().unwrap_or(0) == 0 {
        println!("skipped: no CUDA device");
        return Ok(());
    }
    let device = DeviceMutex::get(options.device)?;
    println!("device: {:?}", device.properties());
    println!("host threads: {}", rayon::current_num_threads());
    println!();
    println!(
        "| n | constraints | record shape s | GPU key s | CPU key s | CPU / GPU | keys equal |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &n in &options.sizes {
        // One constraint a step plus two input constraints: domain 2^n.
        let steps = (1usize << n).saturating_sub(2).max(1);
        let start = Instant::now();
        let shape = CircuitShape::record(FieldHeavy { steps, start: None })?;
        let record = start.elapsed().as_secs_f64();
        let t = Trapdoor::random(&mut OsRng);

        let start = Instant::now();
        let gpu_key = generate_parameters_for_shape_on_gpu(&shape, &t, &device.lock())?;
        let gpu = start.elapsed().as_secs_f64();

        let (cpu, ratio, equal) = if options.cpu_sizes.contains(&n) {
            let start = Instant::now();
            let cpu_key = generate_parameters_for_shape(
                &shape, t.g1, t.g2, t.alpha, t.beta, t.gamma, t.delta, t.tau,
            )?;
            let cpu = start.elapsed().as_secs_f64();
            let equal = cpu_key == gpu_key;
            if !equal {
                return Err(format!("2^{n}: the GPU key differs from the CPU key").into());
            }
            (format!("{cpu:.2}"), format!("{:.1}x", cpu / gpu), "yes")
        } else {
            ("-".into(), "-".into(), "-")
        };
        println!(
            "| {n} | {} | {record:.2} | {gpu:.2} | {cpu} | {ratio} | {equal} |",
            shape.num_constraints()
        );
    }
    Ok(())
}
