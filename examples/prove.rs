//! The main job: build or load parameters for a real circuit (SHA-256 of a
//! message through bellpepper's gadgets), prove on the GPU when there is one
//! (else on the CPU), verify, and print each stage's time.
//!
//! ```text
//! cargo run --release --example prove -- [--size N] [--proofs K]
//!     [--params FILE] [--shape FILE] [--circuit sha256|field]
//!     [--backend auto|cpu|gpu] [--device ORDINAL] [--compare-cpu]
//!     [--split] [--repeats R] [--copies auto|never] [TUNING FLAGS]
//! ```
//! On the GPU (feature `cuda`) the key is uploaded once, and each proof's
//! device work overlaps the next circuit's synthesis. `--compare-cpu` also
//! proves the first circuit on the CPU with the same r and s, checks the
//! bytes are equal and prints both times. `--split` (GPU) then proves one
//! more circuit on one device and split over every device, and prints both
//! times, best and median of `--repeats` (3) each. `--copies never`
//! uploads the key without shifted copies of its bases (the default, auto,
//! adds them where they fit). The tuning flags (`--msm-inline-pieces 32`,
//! `--copy-bits 22,20`, ...; examples/common/tuning_flags.rs lists them)
//! set the `ProverTuning` the key is uploaded with, for sweeps.
//! `--size N` aims at 2^N constraints (sha256 needs N >= 15); `--params FILE`
//! loads the key from FILE if it exists, else generates it and saves it there;
//! `--shape FILE` does the same for the recorded constraint matrices (a loaded
//! shape is checked against the circuit when it synthesizes).

#[path = "common/backend.rs"]
mod backend;
#[path = "../tests/common/circuits.rs"]
mod circuits;
#[path = "common/flags.rs"]
mod flags;
#[path = "common/memory.rs"]
mod memory;
#[path = "common/params.rs"]
mod params;
#[cfg(feature = "cuda")]
#[path = "common/tuning_flags.rs"]
mod tuning_flags;

use flags::Flags;
use memory::peak_host_memory;
#[cfg(feature = "cuda")]
use memory::DeviceMemorySampler;
use params::load_or_generate;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use backend::{choose_backend, Backend};
use blstrs::Scalar;
use circuits::{FieldHeavy, Sha256Circuit};
use ff::Field;
use groth16_gpu::groth16::{prove_timed, StageTimes};
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{prepare_verifying_key, verify_proofs_batch, ProvingKey};
use rand_core::{OsRng, RngCore};

struct Options {
    size: u32,
    proofs: usize,
    params: Option<PathBuf>,
    shape: Option<PathBuf>,
    circuit: String,
    backend: String,
    device: usize,
    compare_cpu: bool,
    split: bool,
    /// Proofs timed each way by `--split`.
    repeats: usize,
    /// GPU: whether the key's bases get shifted copies ("auto" where they
    /// fit, "never").
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    copies: String,
    /// GPU: how the key's proofs run (the tuning flags).
    #[cfg(feature = "cuda")]
    tuning: groth16_gpu::groth16::gpu::ProverTuning,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        size: 16,
        proofs: 1,
        params: None,
        shape: None,
        circuit: "sha256".into(),
        backend: "auto".into(),
        device: 0,
        compare_cpu: false,
        split: false,
        repeats: 3,
        copies: "auto".into(),
        #[cfg(feature = "cuda")]
        tuning: Default::default(),
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--size" => options.size = flags.parsed(&flag)?,
            "--proofs" => options.proofs = flags.parsed(&flag)?,
            "--params" => options.params = Some(PathBuf::from(flags.value(&flag)?)),
            "--shape" => options.shape = Some(PathBuf::from(flags.value(&flag)?)),
            "--circuit" => options.circuit = flags.value(&flag)?,
            "--backend" => options.backend = flags.value(&flag)?,
            "--device" => options.device = flags.parsed(&flag)?,
            "--compare-cpu" => options.compare_cpu = true,
            "--split" => options.split = true,
            "--repeats" => options.repeats = flags.parsed(&flag)?,
            "--copies" => options.copies = flags.value(&flag)?,
            "--help" | "-h" => return Err(String::new()),
            #[cfg(feature = "cuda")]
            other if tuning_flags::parse_tuning_flag(other, &mut flags, &mut options.tuning)? => {}
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !(1..=28).contains(&options.size) || options.proofs == 0 || options.repeats == 0 {
        return Err("--size must be 1..=28, --proofs and --repeats at least 1".into());
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
            eprintln!("{e}\nusage: prove [--size N] [--proofs K] [--params FILE] [--shape FILE] [--circuit sha256|field] [--backend auto|cpu|gpu] [--device ORDINAL] [--compare-cpu] [--split] [--repeats R] [--copies auto|never]");
            #[cfg(feature = "cuda")]
            eprintln!("GPU tuning: {}", tuning_flags::USAGE);
            std::process::exit(2);
        }
    };
    flags::exit_on_error(run(&options));
}

/// Proofs of every instance, with the time of each stage. On the GPU each
/// proof's device work overlaps the next instance's synthesis.
struct ProvingRun {
    proofs: Vec<groth16_gpu::Proof>,
    first_assignment: Option<groth16_gpu::synthesis::Assignment>,
    r_s: Vec<(Scalar, Scalar)>,
    stages: StageTimes,
    key_upload: Duration,
    synthesis: Duration,
    wall: Duration,
}

fn prove_all(
    backend: &Backend,
    key: &ProvingKey,
    shape: &CircuitShape,
    jobs: Vec<Synthesizer>,
    options: &Options,
) -> Result<ProvingRun, Box<dyn std::error::Error>> {
    let keep_first = options.compare_cpu;
    let mut rng = OsRng;
    let mut run = ProvingRun {
        proofs: Vec::with_capacity(jobs.len()),
        first_assignment: None,
        r_s: Vec::new(),
        stages: StageTimes::default(),
        key_upload: Duration::ZERO,
        synthesis: Duration::ZERO,
        wall: Duration::ZERO,
    };
    let mut synthesize = |job: Synthesizer, run: &mut ProvingRun| {
        let start = Instant::now();
        let assignment = job(shape);
        run.synthesis += start.elapsed();
        let r_s = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        run.r_s.push(r_s);
        assignment.map(|a| (a, r_s))
    };
    match backend {
        Backend::Cpu => {
            let start = Instant::now();
            for job in jobs {
                let (assignment, (r, s)) = synthesize(job, &mut run)?;
                let (proof, t) = prove_timed(key, &assignment, r, s)?;
                run.proofs.push(proof);
                run.stages += t;
                if keep_first && run.first_assignment.is_none() {
                    run.first_assignment = Some(assignment);
                }
            }
            run.wall = start.elapsed();
        }
        #[cfg(feature = "cuda")]
        Backend::Gpu(device) => {
            use groth16_gpu::groth16::gpu::{finish_proof_timed, start_proof, GpuProvingKey};
            let guard = device.lock();
            let sampler = DeviceMemorySampler::start(guard.device().ordinal())?;
            let start = Instant::now();
            let policy = copies_policy(&options.copies)?;
            let resident = GpuProvingKey::upload_tuned(&guard, key, policy, &options.tuning)?;
            run.key_upload = start.elapsed();
            println!(
                "key resident on device {}: {} MiB",
                resident.ordinal(),
                resident.device_bytes() >> 20
            );
            // Two proofs in flight: the next one's upload and the one after's
            // synthesis overlap the device work of the one before.
            let start = Instant::now();
            let mut in_flight = std::collections::VecDeque::new();
            for job in jobs {
                let (assignment, (r, s)) = synthesize(job, &mut run)?;
                in_flight.push_back(start_proof(&guard, &resident, &assignment, r, s)?);
                if keep_first && run.first_assignment.is_none() {
                    run.first_assignment = Some(assignment);
                }
                if in_flight.len() > 1 {
                    let (proof, t) = finish_proof_timed(&guard, in_flight.pop_front().unwrap())?;
                    run.proofs.push(proof);
                    run.stages += t;
                }
            }
            for pending in in_flight {
                let (proof, t) = finish_proof_timed(&guard, pending)?;
                run.proofs.push(proof);
                run.stages += t;
            }
            run.wall = start.elapsed();
            println!(
                "peak device memory in use (all processes): {} MiB",
                sampler.stop() >> 20
            );
        }
    }
    Ok(run)
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let backend = choose_backend(&options.backend, options.device)?;
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
    let key = load_or_generate(options.params.as_deref(), &shape)?;
    let key_time = start.elapsed();

    let mut rng = OsRng;
    let (jobs, inputs): (Vec<_>, Vec<_>) =
        (0..options.proofs).map(|_| job.instance(&mut rng)).unzip();
    let run = prove_all(&backend, &key, &shape, jobs, options)?;
    let stages = run.stages;

    let start = Instant::now();
    let pvk = prepare_verifying_key(&key.vk);
    let refs: Vec<_> = run.proofs.iter().collect();
    let valid = verify_proofs_batch(&pvk, &mut rng, &refs, &inputs)?;
    let verify_time = start.elapsed();

    let cpu_time = match (&run.first_assignment, options.compare_cpu) {
        (Some(assignment), true) => {
            let (r, s) = run.r_s[0];
            let start = Instant::now();
            let cpu = groth16_gpu::groth16::prove(&key, assignment, r, s)?;
            let elapsed = start.elapsed();
            if cpu != run.proofs[0] {
                return Err("the CPU proof of the first circuit differs".into());
            }
            println!("the CPU prover gives the same proof bytes for the first circuit");
            Some(elapsed)
        }
        _ => None,
    };

    println!(
        "\nstage                      time ({} proof(s))",
        options.proofs
    );
    let mut rows = vec![
        ("record or load shape", record_time),
        ("parameters", key_time),
        ("key upload (once)", run.key_upload),
        ("synthesis (witness + A/B/C)", run.synthesis),
        ("  upload a/b/c + split", stages.upload),
        // On the GPU, a, b and c may reach the coset during their upload
        // (HInputs::upload_staged): this row is the H polynomial's rest.
        ("  H polynomial (after upload)", stages.h_polynomial),
        ("  MSM h", stages.msm_h),
        ("  MSM l", stages.msm_l),
        ("  MSM a", stages.msm_a),
        ("  MSM b_g1", stages.msm_b_g1),
        ("  MSM b_g2", stages.msm_b_g2),
        ("  assembly", stages.assembly),
        ("synthesis + prove (wall)", run.wall),
        ("verify (batch)", verify_time),
    ];
    if let Some(cpu) = cpu_time {
        rows.push(("CPU prover, first circuit", cpu));
    }
    for (name, t) in rows {
        println!("{name:<28} {}", ms(t));
    }
    println!(
        "per proof, synthesis + prove: {}",
        ms(run.wall / options.proofs as u32)
    );
    println!("first proof: {}", hex(&run.proofs[0].to_bytes()));
    if !valid {
        return Err("a proof did not verify".into());
    }
    println!("all {} proof(s) verified", run.proofs.len());
    if let Some(peak) = peak_host_memory() {
        println!("peak host memory (VmHWM): {peak}");
    }
    #[cfg(feature = "cuda")]
    if options.split {
        let (synthesize, _) = job.instance(&mut rng);
        measure_split(&key, &synthesize(&shape)?, options)?;
    }
    Ok(())
}

/// One proof on device 0 alone, then split over every device, `repeats`
/// times each: the same bytes, and the best and median times.
#[cfg(feature = "cuda")]
fn measure_split(
    key: &ProvingKey,
    assignment: &groth16_gpu::synthesis::Assignment,
    options: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    let repeats = options.repeats;
    use groth16_gpu::groth16::gpu::{prove_on_device, prove_split, GpuProvingKey};
    let devices = groth16_gpu::device::DeviceMutex::all()?;
    if devices.is_empty() {
        return Err("--split needs a GPU".into());
    }
    let guards: Vec<_> = devices.iter().map(|d| d.lock()).collect();
    let policy = copies_policy(&options.copies)?;
    let residents = guards
        .iter()
        .map(|guard| GpuProvingKey::upload_tuned(guard, key, policy, &options.tuning))
        .collect::<Result<Vec<_>, _>>()?;
    let (r, s) = (Scalar::random(&mut OsRng), Scalar::random(&mut OsRng));
    // The proof of the last run and its times, sorted.
    let timed_runs = |f: &dyn Fn() -> Result<groth16_gpu::Proof, groth16_gpu::Error>| {
        let mut times = Vec::with_capacity(repeats);
        let mut proof = None;
        for _ in 0..repeats {
            let start = Instant::now();
            proof = Some(f()?);
            times.push(start.elapsed());
        }
        times.sort();
        Ok::<_, groth16_gpu::Error>((proof, times))
    };
    let (single, single_times) =
        timed_runs(&|| prove_on_device(&guards[0], &residents[0], assignment, r, s).map(|p| p.0))?;
    let guard_refs: Vec<_> = guards.iter().collect();
    let key_refs: Vec<_> = residents.iter().collect();
    let (split, split_times) =
        timed_runs(&|| prove_split(&guard_refs, &key_refs, assignment, r, s).map(|p| p.0))?;
    if split != single {
        return Err("the split proof differs from the one-device proof".into());
    }
    let best = |times: &[Duration]| times[0];
    let median = |times: &[Duration]| times[times.len() / 2];
    println!(
        "one proof, assignment to proof (best of {repeats}): device 0 alone {}, split over {} devices {} ({:.2}x)",
        ms(best(&single_times)),
        guards.len(),
        ms(best(&split_times)),
        best(&single_times).as_secs_f64() / best(&split_times).as_secs_f64()
    );
    println!(
        "one proof, assignment to proof (median of {repeats}): device 0 alone {}, split over {} devices {}",
        ms(median(&single_times)),
        guards.len(),
        ms(median(&split_times)),
    );
    Ok(())
}

/// The key upload's shifted copies, by `--copies`.
#[cfg(feature = "cuda")]
fn copies_policy(
    name: &str,
) -> Result<groth16_gpu::groth16::gpu::ShiftedCopies, Box<dyn std::error::Error>> {
    use groth16_gpu::groth16::gpu::ShiftedCopies;
    match name {
        "auto" => Ok(ShiftedCopies::WhereTheyFit),
        "never" => Ok(ShiftedCopies::Never),
        other => Err(format!("--copies {other}: expected auto or never").into()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
