//! Groth16 over BLS12-381 for bellpepper-core circuits, on NVIDIA GPUs through
//! our own C++/CUDA prover (feature `cuda`) or on the CPU.
//!
//! The crate keeps bellperson 0.27's formats: circuits are
//! `bellpepper_core::Circuit<blstrs::Scalar>`, proving keys use the `.params`
//! layout, proofs the 192-byte compressed encoding. For the same key, witness,
//! `r` and `s` a proof is byte-identical to bellperson's.
//!
//! ```
//! use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
//! use blstrs::Scalar;
//! use groth16_gpu::{create_random_proof, generate_random_parameters,
//!                   prepare_verifying_key, verify_proof};
//!
//! /// Knows x with x * x = y, y public.
//! struct Square(Option<Scalar>);
//! impl Circuit<Scalar> for Square {
//!     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//!         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
//!         let y = cs.alloc_input(|| "y", || self.0.map(|x| x * x).ok_or(SynthesisError::AssignmentMissing))?;
//!         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//!         Ok(())
//!     }
//! }
//!
//! let mut rng = rand_core::OsRng;
//! let key = generate_random_parameters(Square(None), &mut rng)?;
//! let proof = create_random_proof(Square(Some(Scalar::from(3u64))), &key, &mut rng)?;
//! let pvk = prepare_verifying_key(&key.vk);
//! assert!(verify_proof(&pvk, &proof, &[Scalar::from(9u64)])?);
//! # Ok::<(), groth16_gpu::Error>(())
//! ```
#![deny(clippy::all, missing_docs, unsafe_op_in_unsafe_fn)]

mod api;
pub mod backend;
#[cfg(feature = "cuda")]
mod bridge;
#[cfg(feature = "cuda")]
pub mod device;
mod error;
#[cfg(feature = "cuda")]
#[rustfmt::skip]
pub mod ffi_types;
pub mod groth16;
pub mod params;
pub mod pool;
pub mod synthesis;
#[cfg(feature = "cuda")]
mod urgent_lock;

pub use api::{
    create_proof, create_proof_batch, create_proof_batch_in_priority, create_proof_in_priority,
    create_proofs_isolated, create_random_proof, create_random_proof_batch,
    create_random_proof_batch_in_priority, create_random_proof_in_priority,
};
pub use error::Error;
pub use groth16::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey, Proof,
};
pub use params::{
    generate_parameters, generate_parameters_for_shape, generate_parameters_for_shape_random,
    generate_random_parameters, ProvingKey, VerifyingKey,
};
pub use pool::ProverPool;
