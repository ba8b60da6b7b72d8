//! A 32 GiB sector's PoRep C2 at production size on one GPU: ten partitions
//! of Filecoin's real PoRep circuit (storage-proofs-porep 19.1) with
//! production's 11 layers and 18 challenges a partition, over a small
//! replicated sector (the labelling work per challenge does not depend on
//! the sector's size; only the trees' depths do).
//!
//! ```text
//! cargo run --release --features cuda --example porep_c2 -- \
//!     [--layers 11] [--challenges 18] [--partitions 10] [--nodes 64]
//!     [--shape FILE] [--params FILE] [--record-only] [--estimate] [--repeats 3]
//!     [--pipelines ordered:2[,challenges:3,parts:1,threads:10,...]] [--device N]
//! ```
//! Stages, each timed, so a device session can run them apart:
//! 1. replicate the sector and build the partitions' circuits;
//! 2. the shape: read from `--shape FILE` where it exists, else recorded
//!    with the first partition's challenges in runs on every core, joined
//!    (and saved there); `--record-only` stops here. `--estimate` also
//!    records one challenge at 64 and at 512 nodes and extrapolates the
//!    count to a 32 GiB sector's trees;
//! 3. the key: read from `--params FILE` where it exists, else generated
//!    on the GPU in memory from a random trapdoor (and written to FILE
//!    where the disk has room: a production key is tens of GB);
//! 4. the key uploaded (the host copy is then dropped: only the verifying
//!    key stays);
//! 5. one partition alone: its witness on one thread and with its
//!    challenges on every core (the two compared), then its GPU half
//!    `--repeats` times (best and median, and the best one's stages), from
//!    the witness's own vectors and again from a page-locked buffer;
//! 6. every partition from circuit to proof, each proved as its witness is
//!    ready, once for each of `--pipelines`: `parts:N` synthesizes N
//!    partitions at a time, each one's challenges over every core (joined
//!    into the sequential witness), `challenges:N` N partitions at a time
//!    with a run a challenge, the runs of all of them sharing the cores,
//!    `ordered:N` every core on the earliest partition's challenges
//!    first, at most N partitions begun and not yet proved
//!    (porep_c2/in_order.rs: the first witness comes after one
//!    partition's share of the cores, not three; the default is
//!    ordered:2, the fastest measured; `ordered:N/W` on W threads),
//!    `threads:N` N partitions at a time, one thread each. `parts`,
//!    `challenges` and `ordered` join each witness into a page-locked
//!    buffer reused across partitions (a start then uploads it with no
//!    host copy). A start that does not fit device memory beside the
//!    proof in flight waits for that proof;
//! 7. every proof verified with the public inputs Filecoin's crates compute.
//!
//! Then a table of it all, with peak host and device memory.

#[path = "../tests/common/filecoin.rs"]
mod filecoin;
#[path = "common/flags.rs"]
mod flags;
#[path = "porep_c2/in_order.rs"]
mod in_order;
#[path = "common/memory.rs"]
mod memory;
#[path = "porep_c2/pipeline.rs"]
mod pipeline;
#[path = "porep_c2/report.rs"]
mod report;
#[path = "porep_c2/witness_buffers.rs"]
mod witness_buffers;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use filecoin::{
    porep_partitions, porep_partitions_and_parts, PorepCircuit, PorepConfig, PorepParts,
};
use flags::Flags;
use groth16_gpu::device::{Device, DeviceGuard, DeviceMutex};
use groth16_gpu::groth16::gpu::GpuProvingKey;
use groth16_gpu::groth16::StageTimes;
use groth16_gpu::params::{generate_parameters_for_shape_on_gpu, CheckMode, Trapdoor};
use groth16_gpu::synthesis::{CircuitShape, WitnessValues};
use groth16_gpu::{prepare_verifying_key, verify_proofs_batch, Error, Proof, ProvingKey};
use memory::{peak_host_memory, DeviceMemorySampler};
use pipeline::{prove_pipelined, Prover, Synthesis};
use rand_core::OsRng;
use report::{best_and_median, secs, Report};
use witness_buffers::{Witness, WitnessBuffers};

/// Production's PoRep for 32 GiB sectors (filecoin-proofs 19.1's
/// constants): 10 partitions, 176 challenges (18 a partition), 11 layers,
/// 2^30 nodes in trees of arity 8.
const PRODUCTION_LAYERS: usize = 11;
const PRODUCTION_CHALLENGES: usize = 18;
const PRODUCTION_PARTITIONS: usize = 10;
const PRODUCTION_NODES_LOG2: u32 = 30;

struct Options {
    config: PorepConfig,
    shape: Option<PathBuf>,
    params: Option<PathBuf>,
    record_only: bool,
    estimate: bool,
    repeats: usize,
    pipelines: Vec<Synthesis>,
    device: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        config: PorepConfig {
            nodes: 64,
            layers: PRODUCTION_LAYERS,
            challenges_per_partition: PRODUCTION_CHALLENGES,
            partitions: PRODUCTION_PARTITIONS,
        },
        shape: None,
        params: None,
        record_only: false,
        estimate: false,
        repeats: 3,
        pipelines: vec![Synthesis::InOrder {
            at_once: 2,
            workers: None,
        }],
        device: 0,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--layers" => options.config.layers = flags.parsed(&flag)?,
            "--challenges" => options.config.challenges_per_partition = flags.parsed(&flag)?,
            "--partitions" => options.config.partitions = flags.parsed(&flag)?,
            "--nodes" => options.config.nodes = flags.parsed(&flag)?,
            "--shape" => options.shape = Some(flags.value(&flag)?.into()),
            "--params" => options.params = Some(flags.value(&flag)?.into()),
            "--record-only" => options.record_only = true,
            "--estimate" => options.estimate = true,
            "--repeats" => options.repeats = flags.parsed(&flag)?,
            "--pipelines" => {
                options.pipelines = flags
                    .value(&flag)?
                    .split(',')
                    .map(Synthesis::parse)
                    .collect::<Result<_, _>>()?
            }
            "--device" => options.device = flags.parsed(&flag)?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    let c = &options.config;
    if c.layers < 2 || c.challenges_per_partition == 0 || c.partitions == 0 || options.repeats == 0
    {
        return Err(
            "--layers must be at least 2; --challenges, --partitions, --repeats at least 1".into(),
        );
    }
    Ok(options)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    let options = parse_options().unwrap_or_else(|e| {
        eprintln!("{e}\nusage: porep_c2 [--layers 11] [--challenges 18] [--partitions 10] [--nodes 64] [--shape FILE] [--params FILE] [--record-only] [--estimate] [--repeats 3] [--pipelines ordered:2,challenges:3,parts:1,threads:10] [--device N]");
        std::process::exit(2);
    });
    flags::exit_on_error(run(&options));
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let config = options.config;
    let mut report = Report::default();
    report.row(
        "circuit",
        format!(
            "PoRep partition, {} nodes, {} layers, {} challenges; {} partitions",
            config.nodes, config.layers, config.challenges_per_partition, config.partitions
        ),
    );
    let start = Instant::now();
    let (set, parts) = porep_partitions_and_parts(config, &mut OsRng);
    report.row("replicate + build circuits", secs(start.elapsed()));

    let start = Instant::now();
    let (shape, how) = match &options.shape {
        Some(path) if path.exists() => (CircuitShape::read_file(path)?, "shape (read from file)"),
        saved_to => {
            let shape = parts[0].shape_in_parts(rayon::current_num_threads())?;
            let how = match saved_to {
                Some(path) => {
                    shape.write_file(path)?;
                    "shape (recorded, challenges on every core, and saved)"
                }
                None => "shape (recorded, challenges on every core)",
            };
            (shape, how)
        }
    };
    report.row(how, secs(start.elapsed()));
    report.row(
        "constraints",
        format!(
            "{} (domain 2^{}), {} inputs, {} aux",
            shape.num_constraints(),
            shape.num_constraints().next_power_of_two().trailing_zeros(),
            shape.num_inputs(),
            shape.num_aux()
        ),
    );
    if options.estimate {
        estimate_production(&mut report, config.layers)?;
    }
    if options.record_only {
        report.print();
        return Ok(());
    }
    if Device::count().unwrap_or(0) == 0 {
        println!("skipped the proofs: no CUDA device");
        report.print();
        return Ok(());
    }
    prove_on_device(options, &mut report, &shape, set.partitions, parts)?;
    report.print();
    Ok(())
}

/// The count extrapolated to a 32 GiB sector from three small records:
/// one and two challenges at 64 nodes (what a challenge adds, and what the
/// partition shares), and one challenge at 512 nodes (tree depth 3 against
/// 2 in arity 8: one more level of every tree path, of which a 2^30-node
/// sector has 8 more than 64 nodes).
fn estimate_production(
    report: &mut Report,
    layers: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let count = |nodes: usize, challenges: usize| -> Result<i64, Box<dyn std::error::Error>> {
        let config = PorepConfig {
            nodes,
            layers,
            challenges_per_partition: challenges,
            partitions: 1,
        };
        let set = porep_partitions(config, &mut OsRng);
        Ok(CircuitShape::record(set.blank)?.num_constraints() as i64)
    };
    let (one, two, deeper) = (count(64, 1)?, count(64, 2)?, count(512, 1)?);
    let per_challenge = two - one;
    let shared = one - per_challenge;
    let per_level = deeper - one;
    let levels = (PRODUCTION_NODES_LOG2 as i64 - 6) / 3;
    let production_challenge = per_challenge + levels * per_level;
    report.row(
        "64 nodes: 1 / 2 challenges; 512 nodes: 1",
        format!(
            "{one} / {two} / {deeper} constraints: {shared} shared, {per_challenge} a challenge, {per_level} a tree level"
        ),
    );
    report.row(
        "estimate, 32 GiB partition",
        format!(
            "{} constraints ({shared} + {PRODUCTION_CHALLENGES} challenges of {production_challenge}: trees {levels} levels deeper than at 64 nodes)",
            shared + PRODUCTION_CHALLENGES as i64 * production_challenge,
        ),
    );
    Ok(())
}

/// The key: read from `--params FILE` where it exists, else generated on
/// the GPU in memory and, with `--params`, written there where the disk
/// has room for it.
fn key_for(
    options: &Options,
    report: &mut Report,
    shape: &CircuitShape,
    guard: &DeviceGuard<'_>,
) -> Result<ProvingKey, Box<dyn std::error::Error>> {
    let start = Instant::now();
    if let Some(path) = options.params.as_ref().filter(|p| p.exists()) {
        let key = ProvingKey::read_file(path, CheckMode::OnCurve)?;
        report.row("key read from file", secs(start.elapsed()));
        return Ok(key);
    }
    let key = generate_parameters_for_shape_on_gpu(shape, &Trapdoor::random(&mut OsRng), guard)?;
    let bytes = key.serialized_len();
    report.row(
        "key generation (GPU, in memory)",
        format!("{} ({} GB)", secs(start.elapsed()), bytes / 1_000_000_000),
    );
    if let Some(path) = &options.params {
        match free_disk_bytes(path) {
            Some(free) if free < bytes + (1 << 30) => report.row(
                "key not written",
                format!(
                    "{} needs {bytes} bytes, the disk has {free} free",
                    path.display()
                ),
            ),
            _ => {
                let start = Instant::now();
                key.write_file(path)?;
                report.row("key written", secs(start.elapsed()));
            }
        }
    }
    Ok(key)
}

/// Free bytes on the file system that would hold `path` (its folder), where
/// the system says.
fn free_disk_bytes(path: &std::path::Path) -> Option<u64> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty())?;
    let output = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(folder)
        .output()
        .ok()?;
    String::from_utf8(output.stdout)
        .ok()?
        .lines()
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// One partition's GPU half `--repeats` times: its start (A, B, C
/// evaluated from the witness and uploaded) and its whole, best and
/// median, and the stages of the best run.
fn gpu_half_alone(
    options: &Options,
    report: &mut Report,
    guard: &DeviceGuard<'_>,
    prover: &Prover,
    shape: &CircuitShape,
    witness: WitnessValues<'_>,
    label: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut starts, mut wholes) = (Vec::new(), Vec::new());
    let mut best: Option<(Duration, StageTimes)> = None;
    for _ in 0..options.repeats {
        let start = Instant::now();
        let pending = prover.start(guard, shape, witness)?;
        starts.push(start.elapsed());
        let (_, stages) = prover.finish_timed(guard, pending)?;
        let whole = start.elapsed();
        wholes.push(whole);
        let faster = best.map_or(true, |(fastest, _)| whole < fastest);
        if let Some(stages) = stages.filter(|_| faster) {
            best = Some((whole, stages));
        }
    }
    report.row(
        format!("one partition: GPU half{label}"),
        best_and_median(wholes),
    );
    report.row(
        format!("one partition: its start (A, B, C evaluated and uploaded){label}"),
        best_and_median(starts),
    );
    if let Some((_, t)) = best {
        let ms = |d: Duration| format!("{:.0}", d.as_secs_f64() * 1e3);
        report.row(
            format!("one partition: stages of the best{label} (ms, on the device's lanes: they overlap)"),
            format!(
                "upload {}, H polynomial {}, MSM h {}, l {}, a {}, b_g1 {}, b_g2 {}, assembly {}",
                ms(t.upload),
                ms(t.h_polynomial),
                ms(t.msm_h),
                ms(t.msm_l),
                ms(t.msm_a),
                ms(t.msm_b_g1),
                ms(t.msm_b_g2),
                ms(t.assembly)
            ),
        );
    }
    Ok(())
}

/// Page-locked buffers for the pipelines' witnesses, timed.
fn witness_buffers(options: &Options, report: &mut Report, shape: &CircuitShape) -> WitnessBuffers {
    let start = Instant::now();
    let buffers = WitnessBuffers::for_pipelines(&options.pipelines, shape.num_aux());
    report.row(
        "witness buffers (page-locked, for the pipelines)",
        format!(
            "{} of {} GB in {}",
            buffers.count(),
            shape.num_aux() * 32 / 1_000_000_000,
            secs(start.elapsed())
        ),
    );
    buffers
}

fn prove_on_device(
    options: &Options,
    report: &mut Report,
    shape: &CircuitShape,
    partitions: Vec<filecoin::Partition<PorepCircuit>>,
    parts: Vec<PorepParts>,
) -> Result<(), Box<dyn std::error::Error>> {
    let device = DeviceMutex::get(options.device)?;
    report.row("device", device.properties().name.clone());
    let sampler = DeviceMemorySampler::start(options.device)?;
    let guard = device.lock();

    let key = key_for(options, report, shape, &guard)?;
    let pvk = prepare_verifying_key(&key.vk);
    let start = Instant::now();
    let prover = match GpuProvingKey::upload(&guard, &key) {
        Ok(resident) => {
            report.row(
                "key upload",
                format!(
                    "{} ({} GB on the device)",
                    secs(start.elapsed()),
                    resident.device_bytes() / 1_000_000_000
                ),
            );
            drop(key);
            Prover::Resident(resident)
        }
        Err(Error::Gpu(e)) if e.is_out_of_memory() => {
            report.row("key upload", format!("does not fit ({e}): streamed proofs"));
            Prover::Streamed(Box::new(key))
        }
        Err(e) => return Err(e.into()),
    };
    let (circuits, inputs): (Vec<PorepCircuit>, Vec<Vec<Scalar>>) = partitions
        .into_iter()
        .map(|p| (p.circuit, p.inputs))
        .unzip();

    // One partition alone.
    let start = Instant::now();
    let sequential = shape.witness(circuits[0].clone())?;
    report.row("one partition: witness (one thread)", secs(start.elapsed()));
    let cores = rayon::current_num_threads();
    let start = Instant::now();
    let witness = parts[0].witness_in_parts(shape, cores)?;
    report.row(
        format!("one partition: witness, challenges on {cores} threads"),
        secs(start.elapsed()),
    );
    if witness.aux != sequential.aux || witness.input != sequential.input {
        return Err("the witness synthesized in parts differs from the sequential one".into());
    }
    drop(sequential);
    let buffers = witness_buffers(options, report, shape);
    // Its GPU half from the witness's own vectors, then from a buffer.
    let mut witness = Witness::Owned(witness);
    for page_locked in [false, true] {
        if page_locked {
            if buffers.count() == 0 {
                break;
            }
            witness = buffers.hold(witness);
        }
        let label = if page_locked {
            " (witness page-locked)"
        } else {
            ""
        };
        gpu_half_alone(
            options,
            report,
            &guard,
            &prover,
            shape,
            witness.values(),
            label,
        )?;
    }
    buffers.give_back(witness);

    let mut proofs = Vec::new();
    for &synthesis in &options.pipelines {
        let start = Instant::now();
        let run = prove_pipelined(
            &guard,
            &prover,
            shape,
            circuits.clone(),
            parts.clone(),
            synthesis,
            &buffers,
        )?;
        let wall = start.elapsed();
        let made = run.proofs;
        report.row(
            format!(
                "{} partitions, circuits to proofs (wall), {}",
                made.len(),
                synthesis.describe()
            ),
            format!(
                "{} ({} a partition); witnesses {}; {} start(s) waited for device memory",
                secs(wall),
                secs(wall / made.len() as u32),
                best_and_median(run.synthesis_times),
                run.memory_waits
            ),
        );
        proofs.extend(made);
    }
    drop(guard);
    report.row(
        "peak device memory in use",
        format!("{} GB", sampler.stop() / 1_000_000_000),
    );

    // Each pipeline proved every partition: the inputs repeat in order.
    let inputs: Vec<Vec<Scalar>> = inputs.iter().cycle().take(proofs.len()).cloned().collect();
    let refs: Vec<&Proof> = proofs.iter().collect();
    if !verify_proofs_batch(&pvk, &mut OsRng, &refs, &inputs)? {
        return Err("a proof did not verify".into());
    }
    report.row("verified", format!("all {} proofs", proofs.len()));
    if let Some(peak) = peak_host_memory() {
        report.row("peak host memory (VmHWM)", peak);
    }
    Ok(())
}
