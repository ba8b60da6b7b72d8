//! The Groth16 protocol by role: proofs and their encoding, the prover, the
//! verifier, and the recorded shapes kept for the bellperson-shaped entry
//! points (which live above the scheduler, in the crate root).

#[cfg(feature = "cuda")]
pub mod gpu;
mod priority;
mod proof;
mod prover;
pub(crate) mod shape_cache;
mod verifier;

pub use priority::Priority;
pub use proof::{Proof, PROOF_BYTES};
pub(crate) use prover::check_batch_lengths;
pub use prover::{check_key_fits, prove, prove_batch, prove_timed, StageTimes};
pub(crate) use shape_cache::key_digest;
pub use shape_cache::{
    clear_shape_cache, set_shape_cache_capacity, shape_cache_len, DEFAULT_SHAPE_CACHE_CAPACITY,
};
pub use verifier::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey,
};
