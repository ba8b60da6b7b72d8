//! The Groth16 prover on a GPU (feature `cuda`): a proving key resident on
//! a device, and proofs started and finished on that named device.
//!
//! ```no_run
//! # use groth16_gpu::{ProvingKey, synthesis::Assignment};
//! use groth16_gpu::device::DeviceMutex;
//! use groth16_gpu::groth16::gpu::{finish_proof, start_proof, GpuProvingKey};
//! # fn run(key: &ProvingKey, assignments: &[Assignment]) -> Result<(), groth16_gpu::Error> {
//! let devices = DeviceMutex::all()?;
//! let guard = devices[0].lock();
//! let resident = GpuProvingKey::upload(&guard, key)?; // once per device
//! let (r, s) = (blstrs::Scalar::from(7u64), blstrs::Scalar::from(11u64));
//! let pending = start_proof(&guard, &resident, &assignments[0], r, s)?;
//! // ... synthesize the next circuit on the host meanwhile ...
//! let proof = finish_proof(&guard, pending)?;
//! # Ok(()) }
//! ```

mod arrivals;
mod chunked;
mod copies;
mod division;
mod input;
mod kept_keys;
mod key;
mod lanes;
mod prover;
mod resident_key;
mod split;
mod split_bits;
mod streamed;
mod tuning;

pub use copies::ShiftedCopies;
pub use kept_keys::{keep_keys_resident, release_resident_keys, resident_keys, KEYS_PER_DEVICE};
pub(crate) use kept_keys::{
    keep_only as keep_only_key, release_on as release_kept_keys, resident_key as kept_key,
};
pub use key::GpuProvingKey;
pub use prover::{
    finish_proof, finish_proof_timed, prove_on_device, prove_split, start_proof,
    start_proof_shaped, PendingProof,
};
pub use streamed::{prove_streamed, prove_streamed_tuned};
pub use tuning::{CopyShare, ProverTuning};
