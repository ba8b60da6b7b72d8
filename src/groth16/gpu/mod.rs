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
mod auto;
mod copies;
mod division;
mod input;
mod key;
mod lanes;
mod prover;
mod split;
mod streamed;
mod work_queue;

pub use auto::{
    inject_device_fault_for_tests, keep_keys_resident, proofs_by_device, release_resident_keys,
    resident_keys,
};
pub(crate) use auto::{lock_at, prove_batch_on_gpus, GpuSession, WitnessBatch};
pub use copies::ShiftedCopies;
pub use key::GpuProvingKey;
pub use prover::{
    finish_proof, finish_proof_timed, prove_on_device, prove_split, start_proof,
    start_proof_shaped, PendingProof,
};
pub use streamed::{
    prove_streamed, set_stream_chunk_points_for_tests, set_stream_scalars_from_host_for_tests,
};
