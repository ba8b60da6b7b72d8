//! Filecoin's proving calls timed side by side in one run: filecoin-proofs
//! 19.1's own functions (bellperson, on the CPU) against
//! `groth16_gpu::filecoin` on a CPU pool (`ProverPool::cpu(1)`) and on the
//! default pool (`ProverPool::new()`: every GPU this process sees, else the
//! CPU; the table says which), over 2 KiB sectors that filecoin-proofs
//! seals in a temporary folder.
//!
//! ```text
//! cargo run --release --features filecoin --example filecoin_compare -- \
//!     [--repeats 3] [--post-sectors 2]
//! cargo run --release --features cuda,filecoin --example filecoin_compare   # with the GPUs
//! ```
//! - C2: `filecoin_proofs::seal_commit_phase2` against
//!   `filecoin::seal_commit_phase2` (one partition at 2 KiB);
//! - WindowPoSt: `filecoin_proofs::generate_window_post_with_vanilla`
//!   against ours, over `--post-sectors` sectors (two a partition), their
//!   vanilla proofs made once by filecoin-proofs, in sector id order.
//!
//! Each prover is called once untimed first (keys read, shape recorded, a
//! GPU's key uploaded: that time is printed), then `--repeats` times: the
//! table has the best and the median. Every proof, the first included, is
//! checked with filecoin-proofs' verifiers (`verify_seal`,
//! `verify_window_post`); the table counts those accepted. Both provers'
//! C2 also verify their proof inside the call, as filecoin-proofs does.
//!
//! Keys: the `.params` files in filecoin-proofs' parameter cache,
//! `FIL_PROOFS_PARAMETER_CACHE` if set, else `<target>/tmp/filecoin-parameters`
//! (the tests' folder: target/tmp/filecoin-parameters for a plain
//! `cargo run`, found from the executable's place). Missing ones are
//! generated there first with our generator from a random trapdoor (test
//! keys, never for production; the PoRep key took 100-170 s on two
//! shared cores), so the run needs no network. Both provers read the same files.
//! Sealing also writes filecoin-proofs' parent cache
//! (`FIL_PROOFS_PARENT_CACHE`, default /var/tmp/filecoin-parents).

#[path = "../tests/common/filecoin_api.rs"]
mod common;
#[path = "common/flags.rs"]
mod flags;
#[path = "../tests/common/filecoin_post.rs"]
mod post;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{
    copy_phase1, ensure_porep_params, porep_config, seal_sector, seal_verifies, test_rng, Tree,
};
use filecoin_proofs::{verify_window_post, PoStType};
use flags::Flags;
use groth16_gpu::{filecoin, ProverPool};
use post::{
    copy_post, ensure_post_params, post_config, post_vanilla_proofs, public_replicas,
    sealed_for_post,
};
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use storage_proofs_core::api_version::ApiVersion;

type Failure = Box<dyn std::error::Error>;

struct Options {
    repeats: usize,
    post_sectors: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        repeats: 3,
        post_sectors: 2,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--repeats" => o.repeats = flags.parsed(&flag)?,
            "--post-sectors" => o.post_sectors = flags.parsed(&flag)?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if o.repeats == 0 || o.post_sectors == 0 {
        return Err("--repeats and --post-sectors take at least 1".into());
    }
    Ok(o)
}

/// Who proves a row: filecoin-proofs itself, or our call on a pool.
enum Prover<'a> {
    FilecoinProofs,
    Ours { pool: &'a ProverPool, name: String },
}

impl Prover<'_> {
    fn name(&self) -> String {
        match self {
            Prover::FilecoinProofs => "filecoin-proofs 19.1 (bellperson, CPU)".into(),
            Prover::Ours { name, .. } => name.clone(),
        }
    }
}

/// One line of the table: a call by one prover.
struct Row {
    call: String,
    prover: String,
    /// The timed calls (not the first).
    times: Vec<Duration>,
    /// Proofs made, and those filecoin-proofs' verifier accepted.
    proofs: usize,
    verified: usize,
    /// The error that ended the row's calls early.
    error: Option<String>,
}

fn main() {
    env_logger::init();
    flags::exit_on_error(run());
}

fn run() -> Result<(), Failure> {
    let o = options()?;
    // The user's folder, else the tests'; set before filecoin-proofs reads it.
    let cache = common::use_parameter_cache(|| {
        std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(common::default_parameter_cache)
    });
    println!("parameter cache: {}", cache.display());
    let cpu = ProverPool::cpu(1)?;
    let default = ProverPool::new()?;
    let provers = [
        Prover::FilecoinProofs,
        Prover::Ours {
            pool: &cpu,
            name: "ours, ProverPool::cpu(1)".into(),
        },
        Prover::Ours {
            pool: &default,
            name: default_pool_name(&default),
        },
    ];
    println!(
        "{} cores; built {} feature cuda; default pool: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if cfg!(feature = "cuda") {
            "with"
        } else {
            "without"
        },
        provers[2].name()
    );
    let mut rng = test_rng();
    let mut rows = c2_rows(&o, &provers, &mut rng);
    rows.extend(window_post_rows(&o, &provers, &mut rng));
    println!();
    print_table(&rows);
    if rows
        .iter()
        .any(|row| row.error.is_some() || row.verified < row.proofs)
    {
        return Err("not every call made a proof that verifies".into());
    }
    Ok(())
}

/// `ProverPool::new()` and what it found: GPUs, or the CPU.
fn default_pool_name(pool: &ProverPool) -> String {
    let workers = pool.stats();
    let labels: Vec<String> = workers.iter().map(|w| w.label.clone()).collect();
    let found = if workers.iter().any(|w| w.ordinal.is_some()) {
        "GPU"
    } else if cfg!(feature = "cuda") {
        "no GPU seen, so the CPU"
    } else {
        "built without cuda, so the CPU"
    };
    format!("ours, ProverPool::new(): {} ({found})", labels.join(", "))
}

/// C2 of one sealed 2 KiB sector by each prover.
fn c2_rows(o: &Options, provers: &[Prover<'_>], rng: &mut ChaCha20Rng) -> Vec<Row> {
    let config = porep_config(ApiVersion::V1_2_0, vec![]);
    ensure_porep_params(&config);
    let sector = seal_sector(&config, rng);
    let (prover_id, sector_id) = (sector.prover_id, sector.sector_id);
    let call = format!("C2, 2 KiB ({})", partitions(config.partitions.into()));
    provers
        .iter()
        .map(|prover| {
            let prove = |c1| -> Result<Vec<u8>, Failure> {
                let output = match prover {
                    Prover::FilecoinProofs => filecoin_proofs::seal_commit_phase2::<Tree>(
                        &config, c1, prover_id, sector_id,
                    )?,
                    Prover::Ours { pool, .. } => {
                        filecoin::seal_commit_phase2(pool, &config, c1, prover_id, sector_id)?
                    }
                };
                Ok(output.proof)
            };
            measure(
                Row::new(&call, prover),
                o.repeats,
                || copy_phase1(&sector.phase1),
                prove,
                |proof| seal_verifies(&config, &sector, prover_id, sector_id, proof),
            )
        })
        .collect()
}

/// WindowPoSt over `--post-sectors` sealed 2 KiB sectors by each prover.
fn window_post_rows(o: &Options, provers: &[Prover<'_>], rng: &mut ChaCha20Rng) -> Vec<Row> {
    let config = post_config(PoStType::Window);
    ensure_post_params(&config);
    let sectors = sealed_for_post(o.post_sectors, rng);
    let prover_id = sectors[0].prover_id;
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    randomness[31] &= 0x3f; // a field element
    let vanilla = post_vanilla_proofs(
        &config,
        &randomness,
        prover_id,
        &sectors.iter().collect::<Vec<_>>(),
    );
    let replicas = public_replicas(&sectors);
    let call = format!(
        "WindowPoSt, {} × 2 KiB ({})",
        sectors.len(),
        partitions(sectors.len().div_ceil(config.sector_count))
    );
    provers
        .iter()
        .map(|prover| {
            let prove = |vanilla| -> Result<Vec<u8>, Failure> {
                Ok(match prover {
                    Prover::FilecoinProofs => filecoin_proofs::generate_window_post_with_vanilla::<
                        Tree,
                    >(
                        &config, &randomness, prover_id, vanilla
                    )?,
                    Prover::Ours { pool, .. } => filecoin::generate_window_post_with_vanilla(
                        pool,
                        &config,
                        &randomness,
                        prover_id,
                        vanilla,
                    )?,
                })
            };
            measure(
                Row::new(&call, prover),
                o.repeats,
                || copy_post(&vanilla),
                prove,
                |proof| {
                    verify_window_post::<Tree>(&config, &randomness, &replicas, prover_id, proof)
                        .unwrap_or(false)
                },
            )
        })
        .collect()
}

fn partitions(count: usize) -> String {
    match count {
        1 => "1 partition".into(),
        n => format!("{n} partitions"),
    }
}

/// Calls `prove` once untimed, then `repeats` times timed, each on a fresh
/// `input` (made outside the timer: the calls consume theirs) and each
/// proof checked with `verify`; the first error ends the row.
fn measure<I>(
    mut row: Row,
    repeats: usize,
    input: impl Fn() -> I,
    mut prove: impl FnMut(I) -> Result<Vec<u8>, Failure>,
    verify: impl Fn(&[u8]) -> bool,
) -> Row {
    for run in 0..=repeats {
        let input = input();
        let started = Instant::now();
        let proof = match prove(input) {
            Ok(proof) => proof,
            Err(error) => {
                eprintln!("{}, {}: {error}", row.call, row.prover);
                row.error = Some(error.to_string());
                break;
            }
        };
        let elapsed = started.elapsed();
        row.proofs += 1;
        row.verified += usize::from(verify(&proof));
        if run == 0 {
            println!(
                "{}, {}: first call {} (keys read and kept, so not in the table)",
                row.call,
                row.prover,
                seconds(elapsed)
            );
        } else {
            row.times.push(elapsed);
        }
    }
    row
}

impl Row {
    fn new(call: &str, prover: &Prover<'_>) -> Self {
        Self {
            call: call.to_string(),
            prover: prover.name(),
            times: Vec::new(),
            proofs: 0,
            verified: 0,
            error: None,
        }
    }

    /// Best and median of the timed calls (the mean of the middle two for
    /// an even count); `None` without any.
    fn best_and_median(&self) -> Option<(Duration, Duration)> {
        let mut times = self.times.clone();
        times.sort();
        let n = times.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => times[n / 2],
            _ => (times[n / 2 - 1] + times[n / 2]) / 2,
        };
        Some((times[0], median))
    }

    fn verified_cell(&self) -> String {
        let counted = format!("{}/{}", self.verified, self.proofs);
        match &self.error {
            Some(error) => format!("{counted}, then error: {}", error.replace('|', "/")),
            None => counted,
        }
    }
}

fn print_table(rows: &[Row]) {
    println!("| call | prover | best | median | verified |");
    println!("|---|---|---|---|---|");
    for row in rows {
        let (best, median) = match row.best_and_median() {
            Some((best, median)) => (seconds(best), seconds(median)),
            None => ("-".into(), "-".into()),
        };
        println!(
            "| {} | {} | {best} | {median} | {} |",
            row.call,
            row.prover,
            row.verified_cell()
        );
    }
}

/// A duration as the table shows it: seconds, or milliseconds under one.
fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}
