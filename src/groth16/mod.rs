//! The Groth16 protocol by role: proofs and their encoding, the prover, the
//! verifier, and the recorded shapes kept for the bellperson-shaped entry
//! points (which live above the scheduler, in the crate root).
//!
//! ```
//! # use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
//! # use blstrs::Scalar;
//! # struct Square(Option<Scalar>);
//! # impl Circuit<Scalar> for Square {
//! #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//! #         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
//! #         let y = cs.alloc_input(|| "y", || self.0.map(|x| x * x).ok_or(SynthesisError::AssignmentMissing))?;
//! #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//! #         Ok(())
//! #     }
//! # }
//! use groth16_gpu::groth16::{prepare_verifying_key, prove, verify_proof, Proof};
//! use groth16_gpu::synthesis::synthesize;
//!
//! let key = groth16_gpu::generate_random_parameters(Square(None), &mut rand_core::OsRng)?;
//! let assignment = synthesize(Square(Some(Scalar::from(3u64))))?;
//! let (r, s) = (Scalar::from(5u64), Scalar::from(7u64));
//! let proof = prove(&key, &assignment, r, s)?; // the CPU prover, fixed r and s
//! let bytes = proof.to_bytes();                // bellperson's 192 bytes
//! assert_eq!(Proof::from_bytes(&bytes)?, proof);
//! assert!(verify_proof(&prepare_verifying_key(&key.vk), &proof, &[Scalar::from(9u64)])?);
//! # Ok::<(), groth16_gpu::Error>(())
//! ```

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
