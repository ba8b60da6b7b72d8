//! Proves batches through the prover pool on one device, then on several,
//! verifies every proof, and prints each worker's counters and the
//! throughput ratio. Each pool proves two batches: the first uploads the
//! key to its devices, the second finds it resident, as in a node that
//! keeps its pool.
//!
//! ```text
//! cargo run --release --features cuda --example multi_gpu -- \
//!     [--size N] [--proofs K] [--devices all|0|0,1] [--params FILE]
//! ```
//! `--size N`: a FieldHeavy circuit of 2^N constraints (default 16);
//! `--proofs K`: proofs per batch (default 40); `--devices`: the devices of
//! the second run (default all); the first run uses the first of them;
//! `--params FILE`: the key read from FILE, or generated and saved there.
//! Without feature `cuda`, or without a GPU, the runs use CPU workers
//! instead (one, then one per named device, two for `all`): the scheduling
//! is the same, but CPU workers share the cores, so expect a ratio near 1.

#[path = "../tests/common/circuits.rs"]
mod circuits;
#[path = "common/flags.rs"]
mod flags;
#[path = "common/params.rs"]
mod params;

use flags::Flags;
use params::load_or_generate;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use circuits::FieldHeavy;
use ff::Field;
use groth16_gpu::pool::WorkerStats;
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{prepare_verifying_key, verify_proofs_batch, ProverPool, ProvingKey};
use rand_core::OsRng;

type Failure = Box<dyn std::error::Error>;

/// The devices named by `--devices`.
enum Devices {
    All,
    List(Vec<usize>),
}

struct Options {
    size: u32,
    proofs: usize,
    devices: Devices,
    params: Option<PathBuf>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        size: 16,
        proofs: 40,
        devices: Devices::All,
        params: None,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--size" => options.size = flags.parsed(&flag)?,
            "--proofs" => options.proofs = flags.parsed(&flag)?,
            "--params" => options.params = Some(PathBuf::from(flags.value(&flag)?)),
            "--devices" => {
                options.devices = match flags.value(&flag)?.as_str() {
                    "all" => Devices::All,
                    list => Devices::List(
                        list.split(',')
                            .map(|o| o.trim().parse())
                            .collect::<Result<_, _>>()
                            .map_err(|e| format!("--devices: {e}"))?,
                    ),
                }
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !(2..=26).contains(&options.size) || options.proofs == 0 {
        return Err("--size must be 2..=26 and --proofs at least 1".into());
    }
    if matches!(&options.devices, Devices::List(list) if list.is_empty()) {
        return Err("--devices needs at least one ordinal".into());
    }
    Ok(options)
}

/// The workers of one run.
enum Workers {
    #[cfg(feature = "cuda")]
    Gpus(Vec<usize>),
    Cpus(usize),
}

impl Workers {
    fn pool(&self) -> Result<ProverPool, groth16_gpu::Error> {
        match self {
            #[cfg(feature = "cuda")]
            Workers::Gpus(ordinals) => ProverPool::gpus(ordinals),
            Workers::Cpus(count) => ProverPool::cpu(*count),
        }
    }
}

/// The single-device run's workers and the multi-device run's.
fn plan(devices: &Devices) -> (Workers, Workers) {
    #[cfg(feature = "cuda")]
    match groth16_gpu::device::DeviceMutex::all() {
        Ok(found) if !found.is_empty() => {
            let ordinals: Vec<usize> = match devices {
                Devices::All => (0..found.len()).collect(),
                Devices::List(list) => list.clone(),
            };
            return (Workers::Gpus(vec![ordinals[0]]), Workers::Gpus(ordinals));
        }
        Ok(_) => println!("no CUDA device: CPU workers instead"),
        Err(e) => println!("no usable CUDA device ({e}): CPU workers instead"),
    }
    #[cfg(not(feature = "cuda"))]
    println!("built without feature `cuda`: CPU workers instead of devices");
    let count = match devices {
        Devices::All => 2,
        Devices::List(list) => list.len(),
    };
    (Workers::Cpus(1), Workers::Cpus(count))
}

/// The circuit's shape and key.
struct Setup {
    steps: usize,
    shape: CircuitShape,
    key: Arc<ProvingKey>,
}

/// The wall times of one pool's two batches: the first uploads the key to
/// each device, the second finds it resident (a node's steady state).
struct Times {
    cold: Duration,
    warm: Duration,
}

/// Proves two batches of `proofs` fresh circuits through one pool of
/// `workers`, verifying every proof.
fn run_once(setup: &Setup, workers: &Workers, proofs: usize) -> Result<Times, Failure> {
    let pool = workers.pool()?;
    let cold = run_batch(setup, &pool, proofs, "keys uploaded in this batch")?;
    let warm = run_batch(setup, &pool, proofs, "keys resident")?;
    print_stats(&pool.stats(), cold + warm);
    Ok(Times { cold, warm })
}

fn run_batch(
    setup: &Setup,
    pool: &ProverPool,
    proofs: usize,
    what: &str,
) -> Result<Duration, Failure> {
    let circuits: Vec<FieldHeavy> = (0..proofs)
        .map(|_| FieldHeavy {
            steps: setup.steps,
            start: Some(Scalar::random(OsRng)),
        })
        .collect();
    let inputs: Vec<Vec<Scalar>> = circuits.iter().map(|c| vec![c.result()]).collect();
    let random = || (0..proofs).map(|_| Scalar::random(OsRng)).collect();
    let start = Instant::now();
    let proved =
        pool.prove_circuits(&setup.key, Some(&setup.shape), circuits, random(), random())?;
    let wall = start.elapsed();
    let pvk = prepare_verifying_key(&setup.key.vk);
    let refs: Vec<_> = proved.iter().collect();
    if !verify_proofs_batch(&pvk, &mut OsRng, &refs, &inputs)? {
        return Err("a proof did not verify".into());
    }
    println!(
        "{proofs} proofs verified ({what}): {:.2} s, {:.2} proofs/s",
        wall.as_secs_f64(),
        proofs as f64 / wall.as_secs_f64()
    );
    Ok(wall)
}

fn print_stats(stats: &[WorkerStats], wall: Duration) {
    println!(
        "{:<28} {:>7} {:>9} {:>6} {:>8} {:>10} {:>8}",
        "worker", "proofs", "busy s", "busy%", "key ups", "MiB up", "failures"
    );
    for w in stats {
        println!(
            "{:<28} {:>7} {:>9.2} {:>6.1} {:>8} {:>10} {:>8}",
            w.label,
            w.proofs,
            w.busy.as_secs_f64(),
            100.0 * w.busy.as_secs_f64() / wall.as_secs_f64(),
            w.key_uploads,
            w.bytes_uploaded >> 20,
            w.failures
        );
    }
}

fn run(options: &Options) -> Result<(), Failure> {
    let (single, multi) = plan(&options.devices);
    let steps = (1usize << options.size) - 2;
    let start = Instant::now();
    let shape = CircuitShape::record(FieldHeavy { steps, start: None })?;
    let key = Arc::new(load_or_generate(options.params.as_deref(), &shape)?);
    println!(
        "FieldHeavy, {} constraints; key ready in {:.1} s\n",
        shape.num_constraints(),
        start.elapsed().as_secs_f64()
    );
    let setup = Setup { steps, shape, key };
    println!("== one device");
    let one = run_once(&setup, &single, options.proofs)?;
    println!("== all chosen devices");
    let all = run_once(&setup, &multi, options.proofs)?;
    println!(
        "throughput ratio (all / one): {:.2} with the keys resident, {:.2} with their uploads",
        one.warm.as_secs_f64() / all.warm.as_secs_f64(),
        one.cold.as_secs_f64() / all.cold.as_secs_f64()
    );
    Ok(())
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let usage = "usage: multi_gpu [--size N] [--proofs K] [--devices all|0|0,1] [--params FILE]";
    let (code, message) = match parse_options() {
        Err(e) => (2, format!("{e}\n{usage}")),
        Ok(options) => match run(&options) {
            Ok(()) => return,
            Err(e) => (1, format!("error: {e}")),
        },
    };
    eprintln!("{message}");
    std::process::exit(code);
}
