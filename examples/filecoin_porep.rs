//! Filecoin's PoRep partition circuit (storage-proofs-porep 19.1) end to
//! end: circuit to verified-ready proof, on the GPU when there is one (else
//! the CPU), with the key resident.
//!
//! ```text
//! cargo run --release --features cuda --example filecoin_porep -- \
//!     [--challenges 3] [--partitions 10] [--backend auto|cpu|gpu] [--device N] [--pool]
//!     [--batch-api]
//! ```
//! Replicates a 2 KiB sector (64 nodes, 2 layers) in a temporary folder and
//! builds its partition circuits (3 challenges each: 4,031,596 constraints),
//! records their shape once and generates parameters for it. Then:
//! - one partition: synthesis (pre-compiled path) and proof, its latency,
//!   and the same proof (same r and s) from the CPU prover: bytes equal;
//! - every partition: its witness computed in parallel over the cores
//!   while the device proves those that are ready (two in flight, A, B, C
//!   evaluated on the device where the GPU proves); the time per partition
//!   of the whole batch;
//! - with `--pool`, the same partitions (all but the first) again through a
//!   `ProverPool` with one worker on the same backend, which synthesizes
//!   through the shape itself: its time per partition beside the one above;
//! - with `--batch-api` (GPU), the same partitions through
//!   `create_proof_batch` (the call Filecoin makes: the key uploaded for the
//!   call; the first round records the shape, later rounds reuse it), four
//!   rounds, each beside what that call did before (synthesize_batch,
//!   recording every time, then one proof after another).
//!
//! Every proof is verified against the public inputs the crate computes.

#[path = "common/backend.rs"]
mod backend;
#[path = "../tests/common/filecoin.rs"]
mod filecoin;
#[path = "common/flags.rs"]
mod flags;

use flags::Flags;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backend::{choose_backend, Backend};
use blstrs::Scalar;
use ff::Field;
use filecoin::{porep_partitions, PorepCircuit, PorepConfig};
use groth16_gpu::groth16::prove_timed;
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{
    generate_parameters_for_shape_random, prepare_verifying_key, verify_proofs_batch, Proof,
    ProverPool, ProvingKey,
};
use rand_core::OsRng;

struct Options {
    challenges: usize,
    partitions: usize,
    backend: String,
    device: usize,
    pool: bool,
    batch_api: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        challenges: 3,
        partitions: 10,
        backend: "auto".into(),
        device: 0,
        pool: false,
        batch_api: false,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--challenges" => options.challenges = flags.parsed(&flag)?,
            "--partitions" => options.partitions = flags.parsed(&flag)?,
            "--backend" => options.backend = flags.value(&flag)?,
            "--device" => options.device = flags.parsed(&flag)?,
            "--pool" => options.pool = true,
            "--batch-api" => options.batch_api = true,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if options.challenges == 0 || options.partitions == 0 {
        return Err("--challenges and --partitions must be at least 1".into());
    }
    Ok(options)
}

fn ms(d: Duration) -> String {
    format!("{:>9.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let options = parse_options().unwrap_or_else(|e| {
        eprintln!("{e}\nusage: filecoin_porep [--challenges N] [--partitions N] [--backend auto|cpu|gpu] [--device N] [--pool] [--batch-api]");
        std::process::exit(2);
    });
    flags::exit_on_error(run(&options));
}

fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    let backend = choose_backend(&options.backend, options.device)?;
    let config = PorepConfig {
        challenges_per_partition: options.challenges,
        partitions: options.partitions,
        ..PorepConfig::SMALL
    };
    let start = Instant::now();
    let set = porep_partitions(config, &mut OsRng);
    let replicate = start.elapsed();
    let start = Instant::now();
    let shape = CircuitShape::record(set.blank)?;
    let record = start.elapsed();
    println!(
        "PoRep partition: 64 nodes, 2 layers, {} challenges: {} constraints, {} aux; {} partitions",
        options.challenges,
        shape.num_constraints(),
        shape.num_aux(),
        set.partitions.len()
    );
    println!("replicate sector + build circuits {}", ms(replicate));
    println!("record shape                      {}", ms(record));
    let start = Instant::now();
    let key = Arc::new(generate_parameters_for_shape_random(&shape, &mut OsRng)?);
    println!("generate parameters               {}", ms(start.elapsed()));

    let (circuits, inputs): (Vec<PorepCircuit>, Vec<Vec<Scalar>>) = set
        .partitions
        .into_iter()
        .map(|p| (p.circuit, p.inputs))
        .unzip();
    let pool_circuits = options.pool.then(|| circuits[1..].to_vec());
    let batch_api_circuits = options.batch_api.then(|| circuits[1..].to_vec());
    let proofs = match backend {
        Backend::Cpu => prove_on_cpu(&key, &shape, circuits)?,
        #[cfg(feature = "cuda")]
        Backend::Gpu(device) => gpu::prove(device, &key, &shape, circuits)?,
    };
    let pvk = prepare_verifying_key(&key.vk);
    let refs: Vec<&Proof> = proofs.iter().collect();
    if !verify_proofs_batch(&pvk, &mut OsRng, &refs, &inputs)? {
        return Err("a proof did not verify".into());
    }
    println!("all {} proofs verified", proofs.len());

    if let Some(circuits) = pool_circuits.filter(|circuits| !circuits.is_empty()) {
        let pool = match backend {
            Backend::Cpu => ProverPool::cpu(1)?,
            #[cfg(feature = "cuda")]
            Backend::Gpu(device) => ProverPool::gpus(&[device.properties().ordinal])?,
        };
        let proofs = prove_through_pool(&pool, &key, &shape, circuits)?;
        let refs: Vec<&Proof> = proofs.iter().collect();
        if !verify_proofs_batch(&pvk, &mut OsRng, &refs, &inputs[1..])? {
            return Err("a proof from the pool did not verify".into());
        }
        println!("all {} pool proofs verified", proofs.len());
    }
    if let Some(circuits) = batch_api_circuits.filter(|circuits| !circuits.is_empty()) {
        match backend {
            Backend::Cpu => println!(
                "--batch-api: GPU only; {} partitions skipped",
                circuits.len()
            ),
            #[cfg(feature = "cuda")]
            Backend::Gpu(device) => {
                gpu::compare_batch_api(device, &key, circuits, &pvk, &inputs[1..])?
            }
        }
    }
    Ok(())
}

/// The partitions through `pool`, which synthesizes through `shape`: one
/// job first (it uploads the key to a GPU worker), then the batch, timed.
fn prove_through_pool(
    pool: &ProverPool,
    key: &Arc<ProvingKey>,
    shape: &CircuitShape,
    circuits: Vec<PorepCircuit>,
) -> Result<Vec<Proof>, Box<dyn std::error::Error>> {
    let random =
        |count: usize| -> Vec<Scalar> { (0..count).map(|_| Scalar::random(OsRng)).collect() };
    let start = Instant::now();
    pool.prove_circuits(
        key,
        Some(shape),
        vec![circuits[0].clone()],
        random(1),
        random(1),
    )?;
    println!("pool: one partition, key upload   {}", ms(start.elapsed()));
    let count = circuits.len();
    let start = Instant::now();
    let proofs = pool.prove_circuits(key, Some(shape), circuits, random(count), random(count))?;
    report_batch("pool", count, start.elapsed());
    Ok(proofs)
}

/// One partition timed alone, then the rest one after another (the CPU
/// prover uses every core itself).
fn prove_on_cpu(
    key: &ProvingKey,
    shape: &CircuitShape,
    circuits: Vec<PorepCircuit>,
) -> Result<Vec<Proof>, Box<dyn std::error::Error>> {
    let count = circuits.len();
    let start = Instant::now();
    let mut proofs = Vec::with_capacity(count);
    for (i, circuit) in circuits.into_iter().enumerate() {
        let synthesis_start = Instant::now();
        let assignment = shape.synthesize(circuit)?;
        let synthesis = synthesis_start.elapsed();
        let prove_start = Instant::now();
        let (proof, _) = prove_timed(
            key,
            &assignment,
            Scalar::random(OsRng),
            Scalar::random(OsRng),
        )?;
        if i == 0 {
            println!("one partition: synthesis         {}", ms(synthesis));
            println!(
                "one partition: prove (CPU)        {}",
                ms(prove_start.elapsed())
            );
        }
        proofs.push(proof);
    }
    report_batch("batch", count, start.elapsed());
    Ok(proofs)
}

/// `label`: who proved the batch.
fn report_batch(label: &str, count: usize, wall: Duration) {
    println!(
        "{label}: {count} partitions, circuits to proofs {}",
        ms(wall)
    );
    println!(
        "{label}: per partition             {}",
        ms(wall / count as u32)
    );
}

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use groth16_gpu::device::DeviceMutex;
    use groth16_gpu::groth16::gpu::{
        finish_proof, finish_proof_timed, prove_on_device, start_proof, start_proof_shaped,
        GpuProvingKey,
    };
    use groth16_gpu::synthesis::WitnessAssignment;
    use rayon::prelude::*;
    use std::collections::VecDeque;

    /// Partition i's witness, or why its synthesis failed.
    type Synthesized = (usize, Result<WitnessAssignment, groth16_gpu::Error>);

    /// Computes every circuit's witness in parallel over the cores, handing
    /// each over as it is ready (at most `bound` waiting); the device
    /// evaluates A, B, C from it (`start_proof_shaped`).
    fn synthesize_in_background(
        shape: &CircuitShape,
        circuits: Vec<PorepCircuit>,
        bound: usize,
    ) -> (
        std::sync::mpsc::Receiver<Synthesized>,
        impl FnOnce() + Send + '_,
    ) {
        let (sender, receiver) = std::sync::mpsc::sync_channel(bound);
        let work = move || {
            circuits
                .into_par_iter()
                .enumerate()
                .for_each_with(sender, |sender, (i, circuit)| {
                    // A closed receiver means the consumer stopped on an error.
                    let _ = sender.send((i, shape.witness(circuit)));
                });
        };
        (receiver, work)
    }

    /// One partition proved twice per round, side by side: A, B, C
    /// evaluated into vectors on the host before `start_proof`, and
    /// evaluated on the device by `start_proof_shaped` (the first round
    /// also uploads the shape's matrices, once for the key).
    fn compare_evaluation_on_upload(
        guard: &groth16_gpu::device::DeviceGuard<'_>,
        resident: &GpuProvingKey,
        shape: &CircuitShape,
        circuit: PorepCircuit,
        r: Scalar,
        s: Scalar,
        expected: &Proof,
    ) -> Result<(), Box<dyn std::error::Error>> {
        for round in 1..=3 {
            let start = Instant::now();
            let witness = shape.witness(circuit.clone())?;
            let witness_time = start.elapsed();
            let evaluated_start = Instant::now();
            let assignment = shape.assign(witness.clone())?;
            let proof = finish_proof(guard, start_proof(guard, resident, &assignment, r, s)?)?;
            let evaluated = evaluated_start.elapsed();
            drop(assignment);
            let shaped_start = Instant::now();
            let pending = start_proof_shaped(guard, resident, shape, &witness, r, s)?;
            let shaped_proof = finish_proof(guard, pending)?;
            let shaped = shaped_start.elapsed();
            if &proof != expected || &shaped_proof != expected {
                return Err("a repeated proof of the first partition differs".into());
            }
            println!(
                "round {round}: witness {}; witness to proof: evaluated on the host {}, on the device {}",
                ms(witness_time).trim(),
                ms(evaluated).trim(),
                ms(shaped).trim()
            );
        }
        Ok(())
    }

    /// `create_proof_batch` against what it did before proving from
    /// witnesses, four rounds, which goes first alternating; every proof
    /// verified.
    pub fn compare_batch_api(
        device: &DeviceMutex,
        key: &ProvingKey,
        circuits: Vec<PorepCircuit>,
        pvk: &groth16_gpu::PreparedVerifyingKey,
        inputs: &[Vec<Scalar>],
    ) -> Result<(), Box<dyn std::error::Error>> {
        let count = circuits.len();
        let random = || -> Vec<Scalar> { (0..count).map(|_| Scalar::random(OsRng)).collect() };
        for round in 1..=4 {
            // Odd rounds run the previous path first: the first call after
            // the pipelined batch above pays for fresh memory.
            let timed_new = || -> Result<_, Box<dyn std::error::Error>> {
                let start = Instant::now();
                let proofs =
                    groth16_gpu::create_proof_batch(circuits.clone(), key, random(), random())?;
                Ok((proofs, start.elapsed()))
            };
            let timed_before = || -> Result<_, Box<dyn std::error::Error>> {
                let start = Instant::now();
                let proofs =
                    prove_batch_as_before(device, key, circuits.clone(), random(), random())?;
                Ok((proofs, start.elapsed()))
            };
            let ((proofs, now), (before, then)) = if round % 2 == 1 {
                let before = timed_before()?;
                (timed_new()?, before)
            } else {
                (timed_new()?, timed_before()?)
            };
            for proofs in [&proofs, &before] {
                let refs: Vec<&Proof> = proofs.iter().collect();
                if !verify_proofs_batch(pvk, &mut OsRng, &refs, inputs)? {
                    return Err("a batch API proof did not verify".into());
                }
            }
            println!(
                "create_proof_batch, {count} partitions, round {round}: {} (per partition {}); as before: {} ({})",
                ms(now).trim(),
                ms(now / count as u32).trim(),
                ms(then).trim(),
                ms(then / count as u32).trim()
            );
        }
        Ok(())
    }

    /// create_proof_batch's GPU path before it proved from witnesses: every
    /// assignment evaluated, the key uploaded, one proof after another.
    fn prove_batch_as_before(
        device: &DeviceMutex,
        key: &ProvingKey,
        circuits: Vec<PorepCircuit>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
    ) -> Result<Vec<Proof>, Box<dyn std::error::Error>> {
        let start = Instant::now();
        let assignments = groth16_gpu::synthesis::synthesize_batch(circuits)?;
        let synthesized = start.elapsed();
        let guard = device.lock();
        let resident = GpuProvingKey::upload(&guard, key)?;
        let uploaded = start.elapsed();
        let mut proofs = Vec::with_capacity(assignments.len());
        for (assignment, (r, s)) in assignments.iter().zip(r_s.into_iter().zip(s_s)) {
            proofs.push(prove_on_device(&guard, &resident, assignment, r, s)?.0);
        }
        println!(
            "  as before: synthesized {}, key on the GPU {}, proved {} after the start",
            ms(synthesized).trim(),
            ms(uploaded).trim(),
            ms(start.elapsed()).trim()
        );
        Ok(proofs)
    }

    pub fn prove(
        device: &DeviceMutex,
        key: &ProvingKey,
        shape: &CircuitShape,
        mut circuits: Vec<PorepCircuit>,
    ) -> Result<Vec<Proof>, Box<dyn std::error::Error>> {
        let guard = device.lock();
        let start = Instant::now();
        let resident = GpuProvingKey::upload(&guard, key)?;
        println!(
            "key upload (once)                 {}  ({} MiB resident)",
            ms(start.elapsed()),
            resident.device_bytes() >> 20
        );

        // One partition alone: its latency, and the CPU prover's bytes.
        let first = circuits.remove(0);
        let first_again = first.clone();
        let (r, s) = (Scalar::random(OsRng), Scalar::random(OsRng));
        let start = Instant::now();
        let assignment = shape.synthesize(first)?;
        let synthesis = start.elapsed();
        let prove_start = Instant::now();
        let pending = start_proof(&guard, &resident, &assignment, r, s)?;
        let (first_proof, stages) = finish_proof_timed(&guard, pending)?;
        let prove = prove_start.elapsed();
        println!("one partition: synthesis         {}", ms(synthesis));
        println!("one partition: prove (GPU)        {}", ms(prove));
        // The three lanes run at once, so these overlap.
        println!(
            "  stages: upload+split {}, H polynomial {}, MSM h {}, l {}, a {}, b_g1 {}, b_g2 {}",
            ms(stages.upload).trim(),
            ms(stages.h_polynomial).trim(),
            ms(stages.msm_h).trim(),
            ms(stages.msm_l).trim(),
            ms(stages.msm_a).trim(),
            ms(stages.msm_b_g1).trim(),
            ms(stages.msm_b_g2).trim()
        );
        println!("one partition: circuit to proof   {}", ms(start.elapsed()));
        let cpu_start = Instant::now();
        let (cpu_proof, _) = prove_timed(key, &assignment, r, s)?;
        let same = cpu_proof.to_bytes() == first_proof.to_bytes();
        println!(
            "CPU prover, same r and s          {}  (bytes equal: {})",
            ms(cpu_start.elapsed()),
            if same { "yes" } else { "NO" }
        );
        if !same {
            return Err("the GPU proof differs from the CPU proof".into());
        }
        drop(assignment);
        compare_evaluation_on_upload(&guard, &resident, shape, first_again, r, s, &first_proof)?;

        // The rest as a batch: synthesis in parallel, two proofs in flight.
        let count = circuits.len();
        let mut proofs: Vec<Option<Proof>> = (0..count).map(|_| None).collect();
        let start = Instant::now();
        let (ready, synthesize) = synthesize_in_background(shape, circuits, 2);
        std::thread::scope(|scope| -> Result<(), Box<dyn std::error::Error>> {
            scope.spawn(synthesize);
            let mut in_flight = VecDeque::new();
            for (i, witness) in ready {
                let (r, s) = (Scalar::random(OsRng), Scalar::random(OsRng));
                let pending = start_proof_shaped(&guard, &resident, shape, &witness?, r, s)?;
                in_flight.push_back((i, pending));
                if in_flight.len() > 1 {
                    let (j, pending) = in_flight.pop_front().expect("two in flight");
                    proofs[j] = Some(finish_proof(&guard, pending)?);
                }
            }
            for (j, pending) in in_flight {
                proofs[j] = Some(finish_proof(&guard, pending)?);
            }
            Ok(())
        })?;
        if count > 0 {
            report_batch("batch", count, start.elapsed());
        }
        let mut all = vec![first_proof];
        all.extend(
            proofs
                .into_iter()
                .map(|p| p.expect("every partition proved")),
        );
        Ok(all)
    }
}
