//! A GPU worker's prover: one device of this process's set, with the keys
//! kept resident there between jobs (`groth16::gpu::kept_keys`).

use crate::device::{DeviceGuard, DeviceMutex};
use crate::groth16::gpu::{
    finish_proof, keep_only_key, kept_key, prove_streamed, release_kept_keys, start_proof,
    start_proof_shaped, GpuProvingKey, PendingProof,
};
use crate::groth16::Priority;
use crate::Error;

use super::work::{JobInput, Proved, Work};

/// Bytes of one proof's A, B and C evaluations as copied to the device:
/// three vectors over the domain (the constraint count rounded up to a
/// power of two) of 32-byte scalars.
pub(super) fn input_bytes(input: &JobInput) -> u64 {
    3 * input.num_constraints().next_power_of_two() as u64 * 32
}

/// Waits for `device`, an urgent caller ahead of the normal ones.
fn lock_at(device: &DeviceMutex, priority: Priority) -> DeviceGuard<'_> {
    match priority {
        Priority::Normal => device.lock(),
        Priority::Urgent => device.lock_urgent(),
    }
}

/// One device.
pub(super) struct GpuEngine {
    device: &'static DeviceMutex,
}

/// A job a GPU engine started: done already (streamed), or running.
pub(super) enum GpuStart {
    Done(Box<Proved>),
    Running(InFlight),
}

impl GpuEngine {
    pub fn new(device: &'static DeviceMutex) -> Self {
        Self { device }
    }

    pub fn ordinal(&self) -> usize {
        self.device.properties().ordinal
    }

    pub fn label(&self) -> String {
        let properties = self.device.properties();
        format!("gpu {} ({})", properties.ordinal, properties.name)
    }

    /// Starts `work` on the device, locked while starting only (other users
    /// of the device take turns with the pool): the key made resident if it
    /// is not, the proof's inputs uploaded and its GPU work left running. A
    /// key too large for the device even alone is streamed to it instead,
    /// and the proof comes back done.
    pub fn start(&mut self, work: &Work, priority: Priority) -> Result<GpuStart, Error> {
        let result = self.start_locked(work, priority);
        self.forget_keys_after(&result);
        result
    }

    /// Waits for a started proof on the device and assembles it.
    pub fn finish(&mut self, in_flight: InFlight) -> Result<Proved, Error> {
        let result = {
            let guard = lock_at(self.device, in_flight.priority);
            finish_proof(&guard, in_flight.pending)
        };
        self.forget_keys_after(&result);
        Ok(Proved {
            proof: result?,
            bytes_uploaded: in_flight.bytes_uploaded,
            key_uploads: in_flight.key_uploads,
        })
    }

    /// After a device error other than running out of memory the keys kept
    /// there are dropped, so the next job uploads afresh.
    fn forget_keys_after<T>(&self, result: &Result<T, Error>) {
        if let Err(Error::Gpu(error)) = result {
            if !error.is_out_of_memory() {
                release_kept_keys(self.ordinal());
            }
        }
    }

    fn start_locked(&self, work: &Work, priority: Priority) -> Result<GpuStart, Error> {
        let guard = lock_at(self.device, priority);
        let key = work.key.get();
        let (resident, uploaded) = match kept_key(&guard, key, work.key_digest) {
            // No room even alone: the job streams the key's points.
            Err(Error::Gpu(error)) if error.is_out_of_memory() => {
                log::warn!("{error}; streaming the key's points for this job");
                let assignment = work.input.to_assignment()?;
                let proof = prove_streamed(&guard, key, &assignment, work.r, work.s)?;
                return Ok(GpuStart::Done(Box::new(Proved {
                    proof,
                    bytes_uploaded: GpuProvingKey::points_bytes(key) + input_bytes(&work.input),
                    key_uploads: 0,
                })));
            }
            other => other?,
        };
        let start = |resident: &GpuProvingKey| match &work.input {
            JobInput::Assignment(assignment) => {
                start_proof(&guard, resident, assignment, work.r, work.s)
            }
            JobInput::Shaped { shape, witness } => {
                start_proof_shaped(&guard, resident, shape, witness, work.r, work.s)
            }
        };
        let pending = match start(&resident) {
            Err(Error::Gpu(error))
                if error.is_out_of_memory() && keep_only_key(self.ordinal(), work.key_digest) =>
            {
                log::info!("{error}; dropped the other keys kept on the device");
                start(&resident)?
            }
            other => other?,
        };
        let key_bytes = if uploaded { resident.device_bytes() } else { 0 };
        Ok(GpuStart::Running(InFlight {
            pending,
            priority,
            bytes_uploaded: key_bytes + input_bytes(&work.input),
            key_uploads: u64::from(uploaded),
        }))
    }
}

/// A proof running on a GPU engine's device, and what starting it uploaded.
pub(super) struct InFlight {
    pending: PendingProof,
    /// Its job's: an urgent proof is also finished ahead of the others.
    priority: Priority,
    bytes_uploaded: u64,
    key_uploads: u64,
}
