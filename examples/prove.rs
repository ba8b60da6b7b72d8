//! The main job: build or load parameters for a real circuit (SHA-256 of a
//! message through bellpepper's gadgets), prove, verify, and print each
//! stage's time.
//!
//! ```text
//! cargo run --release --example prove -- [--size N] [--proofs K]
//!     [--params FILE] [--shape FILE] [--circuit sha256|field]
//! ```
//! `--size N` aims at 2^N constraints (sha256 needs N >= 15); `--params FILE`
//! loads the key from FILE if it exists, else generates it and saves it there;
//! `--shape FILE` does the same for the recorded constraint matrices (a loaded
//! shape is checked against the circuit when it synthesizes).

#[path = "../tests/common/circuits.rs"]
mod circuits;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use circuits::{FieldHeavy, Sha256Circuit};
use ff::Field;
use groth16_gpu::groth16::{prove_timed, StageTimes};
use groth16_gpu::params::CheckMode;
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{
    generate_parameters_for_shape_random, prepare_verifying_key, verify_proofs_batch, ProvingKey,
};
use rand_core::{OsRng, RngCore};

struct Options {
    size: u32,
    proofs: usize,
    params: Option<PathBuf>,
    shape: Option<PathBuf>,
    circuit: String,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        size: 16,
        proofs: 1,
        params: None,
        shape: None,
        circuit: "sha256".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--size" => options.size = value()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--proofs" => {
                options.proofs = value()?.parse().map_err(|e| format!("--proofs: {e}"))?
            }
            "--params" => options.params = Some(PathBuf::from(value()?)),
            "--shape" => options.shape = Some(PathBuf::from(value()?)),
            "--circuit" => options.circuit = value()?,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !(1..=28).contains(&options.size) || options.proofs == 0 {
        return Err("--size must be 1..=28 and --proofs at least 1".into());
    }
    Ok(options)
}

/// Synthesizes one circuit instance against the recorded shape.
type Synthesizer = Box<
    dyn FnOnce(&CircuitShape) -> Result<groth16_gpu::synthesis::Assignment, groth16_gpu::Error>
        + Send,
>;

/// The circuits to prove plus a blank one for recording the shape and each one's public inputs.
enum Job {
    Sha256(usize),
    Field(usize),
}

impl Job {
    fn for_size(circuit: &str, size: u32) -> Result<Self, String> {
        let target = 1usize << size;
        match circuit {
            // A one-block message costs about 27.5k constraints, each further block about 27k.
            "sha256" if size >= 15 => {
                let blocks = ((target - 1024) / 27_200).max(1);
                Ok(Job::Sha256(blocks * 64 - 9))
            }
            "sha256" => Err("sha256 needs --size 15 or more; use --circuit field".into()),
            // FieldHeavy has one constraint per step plus two input constraints.
            "field" => Ok(Job::Field(target.saturating_sub(2).max(1))),
            other => Err(format!("unknown circuit {other}")),
        }
    }

    fn record(&self) -> Result<CircuitShape, groth16_gpu::Error> {
        match *self {
            Job::Sha256(len) => CircuitShape::record(Sha256Circuit::blank(len)),
            Job::Field(steps) => CircuitShape::record(FieldHeavy { steps, start: None }),
        }
    }

    /// A fresh instance: how to synthesize it against the shape, and its public inputs.
    fn instance(&self, rng: &mut OsRng) -> (Synthesizer, Vec<Scalar>) {
        match *self {
            Job::Sha256(len) => {
                let mut message = vec![0u8; len];
                rng.fill_bytes(&mut message);
                let inputs = Sha256Circuit::public_inputs(&message);
                (
                    Box::new(move |shape| shape.synthesize(Sha256Circuit::new(message))),
                    inputs,
                )
            }
            Job::Field(steps) => {
                let circuit = FieldHeavy {
                    steps,
                    start: Some(Scalar::random(&mut *rng)),
                };
                let inputs = vec![circuit.result()];
                (Box::new(move |shape| shape.synthesize(circuit)), inputs)
            }
        }
    }
}

fn load_or_generate(
    options: &Options,
    shape: &CircuitShape,
) -> Result<ProvingKey, Box<dyn std::error::Error>> {
    if let Some(path) = options.params.as_ref().filter(|p| p.exists()) {
        println!("loading parameters from {}", path.display());
        return Ok(ProvingKey::read_file(path, CheckMode::OnCurve)?);
    }
    println!(
        "generating parameters for {} constraints (minutes at 2^20 and up; progress below)",
        shape.num_constraints()
    );
    let key = generate_parameters_for_shape_random(shape, &mut OsRng)?;
    if let Some(path) = &options.params {
        key.write_file(path)?;
        println!("saved parameters to {}", path.display());
    }
    Ok(key)
}

fn ms(d: Duration) -> String {
    format!("{:>9.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}\nusage: prove [--size N] [--proofs K] [--params FILE] [--shape FILE] [--circuit sha256|field]");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&options) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "backend: CPU ({} threads); the GPU prover is not in this build yet",
        rayon::current_num_threads()
    );
    let job = Job::for_size(&options.circuit, options.size)?;
    let start = Instant::now();
    let shape = match &options.shape {
        Some(path) if path.exists() => CircuitShape::read_file(path)?,
        Some(path) => {
            let shape = job.record()?;
            shape.write_file(path)?;
            shape
        }
        None => job.record()?,
    };
    let record_time = start.elapsed();
    println!(
        "circuit: {}, {} constraints (domain 2^{}), {} public inputs, {} aux variables",
        options.circuit,
        shape.num_constraints(),
        shape.num_constraints().next_power_of_two().trailing_zeros(),
        shape.num_inputs() - 1,
        shape.num_aux()
    );
    let start = Instant::now();
    let key = load_or_generate(options, &shape)?;
    let key_time = start.elapsed();

    let mut rng = OsRng;
    let (jobs, inputs): (Vec<_>, Vec<_>) =
        (0..options.proofs).map(|_| job.instance(&mut rng)).unzip();
    let start = Instant::now();
    let assignments = jobs
        .into_iter()
        .map(|synthesize| synthesize(&shape))
        .collect::<Result<Vec<_>, _>>()?;
    let synthesis_time = start.elapsed();

    let mut stages = StageTimes::default();
    let start = Instant::now();
    let mut proofs = Vec::with_capacity(assignments.len());
    for assignment in &assignments {
        let (proof, t) = prove_timed(
            &key,
            assignment,
            Scalar::random(&mut rng),
            Scalar::random(&mut rng),
        )?;
        proofs.push(proof);
        stages += t;
    }
    let prove_time = start.elapsed();

    let start = Instant::now();
    let pvk = prepare_verifying_key(&key.vk);
    let refs: Vec<_> = proofs.iter().collect();
    let valid = verify_proofs_batch(&pvk, &mut rng, &refs, &inputs)?;
    let verify_time = start.elapsed();

    println!(
        "\nstage                      time ({} proof(s))",
        options.proofs
    );
    for (name, t) in [
        ("record or load shape", record_time),
        ("parameters", key_time),
        ("synthesis (witness + A/B/C)", synthesis_time),
        ("  H polynomial (NTTs)", stages.h_polynomial),
        ("  MSM h", stages.msm_h),
        ("  MSM l", stages.msm_l),
        ("  MSM a", stages.msm_a),
        ("  MSM b_g1", stages.msm_b_g1),
        ("  MSM b_g2", stages.msm_b_g2),
        ("  assembly", stages.assembly),
        ("prove total", prove_time),
        ("verify (batch)", verify_time),
    ] {
        println!("{name:<28} {}", ms(t));
    }
    println!(
        "per proof, synthesis + prove: {}",
        ms((synthesis_time + prove_time) / options.proofs as u32)
    );
    println!("first proof: {}", hex(&proofs[0].to_bytes()));
    if !valid {
        return Err("a proof did not verify".into());
    }
    println!("all {} proof(s) verified", proofs.len());
    if let Some(peak) = peak_host_memory() {
        println!("peak host memory (VmHWM): {peak}");
    }
    Ok(())
}

/// The process's peak resident memory, where /proc says it (Linux).
fn peak_host_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.trim_start_matches("VmHWM:").trim().to_string())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
