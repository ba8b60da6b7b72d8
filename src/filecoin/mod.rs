//! Filecoin's proving calls (feature `filecoin`), with the SNARK work on a
//! [`ProverPool`] the caller chooses: filecoin-proofs 19.1's functions of
//! the same names, inputs and outputs, plus the pool.
//!
//! | call | filecoin-proofs 19.1 |
//! |------|----------------------|
//! | [`seal_commit_phase2`] | PoRep C2, every sector size, interactive and NI-PoRep |
//! | [`generate_window_post_with_vanilla`] | WindowPoSt |
//! | [`generate_winning_post_with_vanilla`] | WinningPoSt |
//! | [`generate_empty_sector_update_proof_with_vanilla`] | SnapDeals |
//!
//! The circuits are the storage-proofs crates' own, built from the vanilla
//! proofs as filecoin-proofs builds them; only the Groth16 proving moves to
//! the pool ([`ProverPool::prove_circuits`]): partitions are synthesized in
//! parallel and each is proved as soon as it is ready. The proof bytes are
//! filecoin-proofs' (192 bytes a partition, concatenated).
//!
//! Keys come from where filecoin-proofs looks for them: its parameter cache
//! folder (`FIL_PROOFS_PARAMETER_CACHE`, read by filecoin-proofs' settings,
//! not by this crate), the `.params` file named by the circuit's cache
//! identifier ([`params_path`], [`cache_identifier`]). Each key is read
//! once and kept ([`clear_key_cache`] drops them); each circuit's shape is
//! recorded once from the blank circuit the key was made from and kept in
//! the crate's shape cache ([`crate::groth16::set_shape_cache_capacity`]:
//! raise it to 4 for a process that proves all four kinds).
//!
//! Before proving, the vanilla proofs are checked against the public
//! inputs (cheap next to the SNARK), so a wrong sector, prover id or
//! commitment is a [`FilecoinError`] naming it, not a proof that fails to
//! verify. PoRep's result is checked with filecoin-proofs' `verify_seal`,
//! as filecoin-proofs does.
//!
//! ```no_run
//! use groth16_gpu::filecoin::{self, C1Output};
//! use groth16_gpu::ProverPool;
//! let pool = ProverPool::new()?; // every GPU, else the CPU
//! // Commit phase 1's output, as filecoin-ffi, lotus-bench and Curio write it.
//! let c1 = C1Output::read_file("c1.json")?;
//! let porep_config = c1.registered_proof.porep_config()?;
//! let prover_id = [1u8; 32];
//! let output = filecoin::seal_commit_phase2_c1(&pool, &c1, prover_id, 7.into())?;
//! assert_eq!(output.proof.len(), 192 * usize::from(porep_config.partitions));
//! # Ok::<(), groth16_gpu::Error>(())
//! ```

mod c1_file;
mod compound;
mod error;
mod keys;
mod post;
mod seal;
mod update;

pub use c1_file::{seal_commit_phase2_c1, C1Output, RegisteredSealProof};
pub use compound::{cache_identifier, PartitionRandomness};
pub use error::FilecoinError;
pub use keys::{clear_key_cache, params_path};
pub use post::{
    generate_post_with_vanilla_and_randomness, generate_window_post_with_vanilla,
    generate_winning_post_with_vanilla,
};
pub use seal::{
    seal_commit_phase2, seal_commit_phase2_circuit_proofs, seal_commit_phase2_with_randomness,
};
pub use update::{
    generate_empty_sector_update_proof_with_randomness,
    generate_empty_sector_update_proof_with_vanilla,
};

use crate::Proof;
#[cfg(doc)]
use crate::ProverPool;

/// Partition proofs as filecoin-proofs writes them: each proof's 192
/// bytes, in partition order.
fn proof_bytes(proofs: &[Proof]) -> Vec<u8> {
    proofs.iter().flat_map(|proof| proof.to_bytes()).collect()
}
