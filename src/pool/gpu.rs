//! A GPU worker's prover: one device of this process's shared set, with the
//! proving keys it used last kept resident between jobs.

use std::sync::Arc;

use crate::device::{DeviceGuard, DeviceMutex};
use crate::groth16::gpu::{
    finish_proof, lock_at, prove_streamed, start_proof, GpuProvingKey, PendingProof,
};
use crate::groth16::Priority;
use crate::params::ProvingKey;
use crate::synthesis::Assignment;
use crate::Error;

use super::engine::{Proved, Started};
use super::queue::Work;

/// At most this many proving keys stay resident on one device; a further
/// key evicts the one used longest ago.
const RESIDENT_KEYS: usize = 2;

/// Bytes of one proof's A, B and C evaluations as copied to the device:
/// three vectors over the domain (the constraint count rounded up to a
/// power of two) of 32-byte scalars.
pub(super) fn input_bytes(assignment: &Assignment) -> u64 {
    3 * assignment.num_constraints().next_power_of_two() as u64 * 32
}

/// A key on the device, and the host key it came from. Holding the `Arc`
/// keeps its address from being reused by another key while cached.
struct CachedKey {
    host: Arc<ProvingKey>,
    resident: GpuProvingKey,
}

/// The keys resident on one device, the one used longest ago first.
#[derive(Default)]
struct KeyCache {
    keys: Vec<CachedKey>,
}

impl KeyCache {
    /// `key` on the guard's device, and whether it was uploaded now. Makes
    /// room by evicting the oldest key past [`RESIDENT_KEYS`], and every
    /// other key when the device is short of memory.
    fn get_or_upload(
        &mut self,
        guard: &DeviceGuard<'_>,
        key: &Arc<ProvingKey>,
    ) -> Result<(GpuProvingKey, bool), Error> {
        if let Some(position) = self.keys.iter().position(|c| Arc::ptr_eq(&c.host, key)) {
            let cached = self.keys.remove(position);
            let resident = cached.resident.clone();
            self.keys.push(cached);
            return Ok((resident, false));
        }
        if self.keys.len() >= RESIDENT_KEYS {
            self.keys.remove(0);
        }
        let resident = match GpuProvingKey::upload(guard, key) {
            Err(Error::Gpu(error)) if error.is_out_of_memory() && !self.keys.is_empty() => {
                log::info!("{error}; evicting the other resident keys");
                self.keys.clear();
                GpuProvingKey::upload(guard, key)?
            }
            other => other?,
        };
        self.keys.push(CachedKey {
            host: key.clone(),
            resident: resident.clone(),
        });
        Ok((resident, true))
    }

    /// Evicts every key but `key`; whether any was evicted.
    fn keep_only(&mut self, key: &Arc<ProvingKey>) -> bool {
        let before = self.keys.len();
        self.keys.retain(|c| Arc::ptr_eq(&c.host, key));
        self.keys.len() < before
    }
}

/// One device and its resident keys.
pub(super) struct GpuEngine {
    device: &'static DeviceMutex,
    keys: KeyCache,
}

impl GpuEngine {
    pub fn new(device: &'static DeviceMutex) -> Self {
        Self {
            device,
            keys: KeyCache::default(),
        }
    }

    pub fn ordinal(&self) -> usize {
        self.device.properties().ordinal
    }

    pub fn label(&self) -> String {
        let properties = self.device.properties();
        format!("gpu {} ({})", properties.ordinal, properties.name)
    }

    /// Starts `work` on the device, locked while starting only (other users
    /// of the shared devices take turns with the pool): the key made
    /// resident if it is not, the proof's inputs uploaded and its GPU work
    /// left running. A key too large for the device even alone is streamed
    /// to it instead, and the proof comes back done.
    pub fn start(&mut self, work: &Work, priority: Priority) -> Result<Started, Error> {
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

    /// After a device error other than running out of memory the resident
    /// keys are dropped, so the next job uploads afresh.
    fn forget_keys_after<T>(&mut self, result: &Result<T, Error>) {
        if let Err(Error::Gpu(error)) = result {
            if !error.is_out_of_memory() {
                self.keys = KeyCache::default();
            }
        }
    }

    fn start_locked(&mut self, work: &Work, priority: Priority) -> Result<Started, Error> {
        let guard = lock_at(self.device, priority);
        let (resident, uploaded) = match self.keys.get_or_upload(&guard, &work.key) {
            // No room even alone: the job streams the key's points.
            Err(Error::Gpu(error)) if error.is_out_of_memory() => {
                log::warn!("{error}; streaming the key's points for this job");
                let proof = prove_streamed(&guard, &work.key, &work.assignment, work.r, work.s)?;
                return Ok(Started::Done(Box::new(Proved {
                    proof,
                    bytes_uploaded: GpuProvingKey::points_bytes(&work.key)
                        + input_bytes(&work.assignment),
                    key_uploads: 0,
                })));
            }
            other => other?,
        };
        let start = |resident: &GpuProvingKey| {
            start_proof(&guard, resident, &work.assignment, work.r, work.s)
        };
        let pending = match start(&resident) {
            Err(Error::Gpu(error))
                if error.is_out_of_memory() && self.keys.keep_only(&work.key) =>
            {
                log::info!("{error}; evicted the other resident keys");
                start(&resident)?
            }
            other => other?,
        };
        let key_bytes = if uploaded { resident.device_bytes() } else { 0 };
        Ok(Started::Gpu(InFlight {
            pending,
            priority,
            bytes_uploaded: key_bytes + input_bytes(&work.assignment),
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
