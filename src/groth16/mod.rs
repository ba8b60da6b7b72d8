//! The Groth16 protocol by role: proofs and their encoding, the prover, the
//! verifier, and bellperson-shaped entry points over them.

mod api;
#[cfg(feature = "cuda")]
pub mod gpu;
mod priority;
mod proof;
mod prover;
mod shape_cache;
mod verifier;

pub(crate) use api::catch_circuit_panic;
pub use api::{
    create_proof, create_proof_batch, create_proof_batch_in_priority, create_proof_in_priority,
    create_proofs_isolated, create_random_proof, create_random_proof_batch,
    create_random_proof_batch_in_priority, create_random_proof_in_priority,
};
pub use priority::Priority;
pub use proof::{Proof, PROOF_BYTES};
pub(crate) use prover::check_batch_lengths;
pub use prover::{check_key_fits, prove, prove_batch, prove_timed, StageTimes};
pub use shape_cache::{
    clear_shape_cache, set_shape_cache_capacity, shape_cache_len, DEFAULT_SHAPE_CACHE_CAPACITY,
};
pub use verifier::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey,
};
