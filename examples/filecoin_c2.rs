//! PoRep commit phase 2 (C2) from a C1 output file, on every GPU this
//! process sees or else the CPU (`ProverPool::new`), through
//! `groth16_gpu::filecoin`; then filecoin-proofs' `verify_seal`.
//!
//! ```text
//! cargo run --release --features filecoin --example filecoin_c2 -- C1.json \
//!     [--out C2.json] [--miner 1000] [--sector-id N] [--generate-params]
//! cargo run --release --features filecoin --example filecoin_c2 -- \
//!     --make-c1 --sector-size 2KiB [--out C1.json] [--miner 1000] [--sector-id 1]
//! ```
//! The C1 file is the JSON filecoin-ffi writes (filecoin-proofs-api's
//! `SealCommitPhase1Output`), bare or in lotus-bench's wrapper (whose
//! `SectorNum` is the sector id unless `--sector-id` says otherwise). The
//! prover id is that of miner actor `--miner` (lotus-bench's t01000 by
//! default). Keys are read from filecoin-proofs' parameter cache
//! (`FIL_PROOFS_PARAMETER_CACHE`, default /var/tmp/filecoin-proof-parameters);
//! `--generate-params` makes missing 2 KiB keys there with our generator
//! (test keys from a random trapdoor, never for production).
//!
//! `--make-c1` seals a sector of random data with filecoin-proofs' own
//! calls (pre-commit 1 and 2, commit 1) and writes its C1 output.

#[path = "common/flags.rs"]
mod flags;

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use filecoin_proofs::parameters::public_params;
use filecoin_proofs::{
    add_piece, generate_piece_commitment, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2, verify_seal, DefaultPieceHasher, PoRepConfig, SectorShape2KiB,
    SectorShape32GiB, SectorShape64GiB, UnpaddedBytesAmount,
};
use flags::Flags;
use groth16_gpu::filecoin::{self, C1Output, RegisteredSealProof};
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{generate_parameters_for_shape_random, ProverPool};
use rand_core::RngCore;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

type Failure = Box<dyn std::error::Error>;

struct Options {
    c1: Option<PathBuf>,
    out: Option<PathBuf>,
    miner: u64,
    sector_id: Option<u64>,
    make_c1: bool,
    sector_size: u64,
    generate_params: bool,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        c1: None,
        out: None,
        miner: 1000,
        sector_id: None,
        make_c1: false,
        sector_size: 2 << 10,
        generate_params: false,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--out" => o.out = Some(flags.value(&flag)?.into()),
            "--miner" => o.miner = flags.parsed(&flag)?,
            "--sector-id" => o.sector_id = Some(flags.parsed(&flag)?),
            "--make-c1" => o.make_c1 = true,
            "--generate-params" => o.generate_params = true,
            "--sector-size" => {
                o.sector_size = match flags.value(&flag)?.as_str() {
                    "2KiB" => 2 << 10,
                    "8MiB" => 8 << 20,
                    "512MiB" => 512 << 20,
                    "32GiB" => 32 << 30,
                    "64GiB" => 64 << 30,
                    other => return Err(format!("--sector-size: unknown size {other}")),
                }
            }
            file if !file.starts_with("--") => o.c1 = Some(file.into()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(o)
}

/// The prover id filecoin-ffi derives from a miner actor id: the ID
/// address's payload (the id as an unsigned LEB128 varint), zero-padded.
fn prover_id(miner: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let (mut rest, mut at) = (miner, 0);
    loop {
        let byte = (rest & 0x7f) as u8;
        rest >>= 7;
        id[at] = if rest == 0 { byte } else { byte | 0x80 };
        at += 1;
        if rest == 0 {
            return id;
        }
    }
}

fn main() {
    env_logger::init();
    flags::exit_on_error(run());
}

fn run() -> Result<(), Failure> {
    let o = options()?;
    if o.make_c1 {
        return make_c1(&o);
    }
    let path = o.c1.clone().ok_or("give a C1 output file, or --make-c1")?;
    let started = Instant::now();
    let c1 = C1Output::read_file(&path)?;
    let sector_id = SectorId::from(o.sector_id.or(c1.sector_num).unwrap_or(1));
    let prover_id = prover_id(o.miner);
    println!(
        "{}: {} ({} bytes), sector {sector_id:?}, read in {:.2} s",
        path.display(),
        c1.registered_proof.name,
        c1.registered_proof.sector_size,
        started.elapsed().as_secs_f64()
    );
    let config = c1.registered_proof.porep_config()?;
    if o.generate_params {
        generate_missing_params(&config)?;
    }

    let pool = ProverPool::new()?;
    println!("prover pool: {} worker(s)", pool.workers());
    let started = Instant::now();
    let output = filecoin::seal_commit_phase2_c1(&pool, &c1, prover_id, sector_id)?;
    println!(
        "C2: {} bytes in {:.2} s (checked with verify_seal)",
        output.proof.len(),
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let valid = match u64::from(config.sector_size) {
        s if s <= 512 << 20 => {
            verify::<SectorShape2KiB>(&config, &c1, prover_id, sector_id, &output.proof)?
        }
        s if s == 32 << 30 => {
            verify::<SectorShape32GiB>(&config, &c1, prover_id, sector_id, &output.proof)?
        }
        _ => verify::<SectorShape64GiB>(&config, &c1, prover_id, sector_id, &output.proof)?,
    };
    println!(
        "verify_seal: {valid} in {:.3} s",
        started.elapsed().as_secs_f64()
    );

    let out = o.out.unwrap_or_else(|| path.with_extension("c2.json"));
    // filecoin-ffi's SealCommitPhase2Output: {"proof": [bytes]}.
    let json = serde_json::json!({ "proof": output.proof });
    std::fs::File::create(&out)?.write_all(json.to_string().as_bytes())?;
    println!("wrote {}", out.display());
    if !valid {
        return Err("the proof does not verify".into());
    }
    Ok(())
}

fn verify<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: &C1Output,
    prover_id: [u8; 32],
    sector_id: SectorId,
    proof: &[u8],
) -> Result<bool, Failure> {
    let phase1 = c1.phase1_output::<Tree>()?;
    Ok(verify_seal::<Tree>(
        config,
        phase1.comm_r,
        phase1.comm_d,
        prover_id,
        sector_id,
        phase1.ticket,
        phase1.seed,
        proof,
    )?)
}

/// Test keys for a 2 KiB sector's PoRep where filecoin-proofs looks, if
/// there are none yet.
fn generate_missing_params(config: &PoRepConfig) -> Result<(), Failure> {
    if u64::from(config.sector_size) != 2 << 10 {
        return Err("--generate-params makes 2 KiB keys only".into());
    }
    type Tree = SectorShape2KiB;
    let vanilla = public_params::<Tree>(config)?;
    let id = filecoin::cache_identifier::<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
        StackedCompound<Tree, DefaultPieceHasher>,
    >(&vanilla);
    let path = filecoin::params_path(&id);
    if path.exists() {
        return Ok(());
    }
    let started = Instant::now();
    let blank =
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&vanilla);
    let shape = CircuitShape::record(blank)?;
    let key = generate_parameters_for_shape_random(&shape, &mut rand_core::OsRng)?;
    std::fs::create_dir_all(path.parent().ok_or("no parameter folder")?)?;
    key.write_file(&path)?;
    println!(
        "generated test keys ({} constraints) in {:.1} s: {}",
        shape.num_constraints(),
        started.elapsed().as_secs_f64(),
        path.display()
    );
    Ok(())
}

/// Seals a sector of random data through filecoin-proofs and writes its C1 output.
fn make_c1(o: &Options) -> Result<(), Failure> {
    if o.sector_size != 2 << 10 {
        return Err("--make-c1 seals 2 KiB sectors only (this is an example)".into());
    }
    type Tree = SectorShape2KiB;
    let registered = RegisteredSealProof::of(o.sector_size, 1)?;
    let config = registered.porep_config()?;
    let (prover_id, sector_id) = (prover_id(o.miner), SectorId::from(o.sector_id.unwrap_or(1)));
    let mut rng = rand_core::OsRng;
    let dir = tempfile::tempdir()?;
    let (piece, staged, replica) = (
        dir.path().join("piece"),
        dir.path().join("staged"),
        dir.path().join("sealed"),
    );
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache)?;

    let started = Instant::now();
    let size = UnpaddedBytesAmount::from(config.sector_size);
    let mut data = vec![0u8; u64::from(size) as usize];
    rng.fill_bytes(&mut data);
    std::fs::write(&piece, &data)?;
    let piece_info = generate_piece_commitment(std::fs::File::open(&piece)?, size)?;
    add_piece(
        std::fs::File::open(&piece)?,
        std::fs::File::create(&staged)?,
        size,
        &[],
    )?;
    std::fs::File::create(&replica)?;
    let (mut ticket, mut seed) = ([0u8; 32], [0u8; 32]);
    rng.fill_bytes(&mut ticket);
    rng.fill_bytes(&mut seed);
    let pieces = [piece_info];
    let pc1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        &config, &cache, &staged, &replica, prover_id, sector_id, ticket, &pieces,
    )?;
    let pre_commit = seal_pre_commit_phase2(&config, pc1, &cache, &replica)?;
    let phase1 = seal_commit_phase1::<_, Tree>(
        &config, &cache, &replica, prover_id, sector_id, ticket, seed, pre_commit, &pieces,
    )?;
    let out = o.out.clone().unwrap_or_else(|| "c1.json".into());
    std::fs::write(&out, C1Output::from_phase1(registered, &phase1)?.to_json())?;
    println!(
        "sealed a 2 KiB sector (miner {}, sector {sector_id:?}) in {:.2} s; wrote {}",
        o.miner,
        started.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}
