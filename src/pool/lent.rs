//! The process-wide default pool, and calls whose key is lent rather than
//! shared: the bellperson-shaped functions take `&ProvingKey` and run on
//! this pool, waiting for every job before they return.

use std::sync::Arc;

use blstrs::Scalar;
use parking_lot::Mutex;

use super::batch::{Batch, JobReport};
use super::submit::SubmittedKey;
use super::work::{BorrowedKey, JobInput, KeyRef};
use super::ProverPool;
use crate::groth16::key_digest;
use crate::params::ProvingKey;
use crate::synthesis::{Assignment, CircuitShape, WitnessAssignment};
use crate::Error;

static GLOBAL: Mutex<Option<ProverPool>> = Mutex::new(None);

impl ProverPool {
    /// The process's default pool, made on first use as [`ProverPool::new`]
    /// makes one (every GPU, else one CPU worker), with the CPU proving
    /// what every device failed. The bellperson-shaped functions
    /// ([`create_proof_batch`](crate::create_proof_batch) and the rest) run
    /// on it, so its [`stats`](Self::stats) show where their proofs went.
    pub fn global() -> Result<ProverPool, Error> {
        let mut global = GLOBAL.lock();
        if let Some(pool) = global.as_ref() {
            return Ok(pool.clone());
        }
        let pool = ProverPool::new()?.with_cpu_fallback(true);
        *global = Some(pool.clone());
        Ok(pool)
    }

    /// Proves witnesses of `shape` with a lent key: each job's A, B, C come
    /// from the shape (on a GPU evaluated into the upload buffers). The
    /// first failure cancels the jobs not yet started. Returns once every
    /// job is answered.
    pub(crate) fn prove_witnesses_lent(
        &self,
        key: &ProvingKey,
        shape: &Arc<CircuitShape>,
        witnesses: Vec<WitnessAssignment>,
        r_s: &[Scalar],
        s_s: &[Scalar],
    ) -> Vec<JobReport> {
        let inputs = witnesses.into_iter().map(|witness| {
            Ok(JobInput::Shaped {
                shape: shape.clone(),
                witness,
            })
        });
        self.run_lent(key, inputs.collect(), r_s, s_s, true)
    }

    /// Proves assignments (or the errors that stand for them) with a lent
    /// key; returns once every job is answered.
    pub(crate) fn prove_assignments_lent(
        &self,
        key: &ProvingKey,
        assignments: Vec<Result<Assignment, Error>>,
        r_s: &[Scalar],
        s_s: &[Scalar],
    ) -> Vec<JobReport> {
        let inputs = assignments
            .into_iter()
            .map(|assignment| assignment.map(JobInput::Assignment));
        self.run_lent(key, inputs.collect(), r_s, s_s, false)
    }

    /// `fail_fast`: the first failure cancels the jobs not yet started.
    fn run_lent(
        &self,
        key: &ProvingKey,
        inputs: Vec<Result<JobInput, Error>>,
        r_s: &[Scalar],
        s_s: &[Scalar],
        fail_fast: bool,
    ) -> Vec<JobReport> {
        let batch = self.new_batch(inputs.len(), fail_fast);
        // Waits for every job even if this thread unwinds while queueing:
        // the jobs read the key through a plain pointer.
        let waiting = WaitForBatch(&batch);
        let key = SubmittedKey {
            digest: key_digest(key),
            // SAFETY: `waiting` keeps this call from returning (or
            // unwinding past this frame) before every job is answered,
            // and a worker answers a job only after its last read of the
            // key; `key` is borrowed for the whole call.
            key: KeyRef::Borrowed(unsafe { BorrowedKey::new(key) }),
        };
        for (index, (input, (r, s))) in inputs.into_iter().zip(r_s.iter().zip(s_s)).enumerate() {
            self.submit(&batch, index, &key, input, *r, *s);
        }
        std::mem::forget(waiting);
        batch.wait()
    }
}

/// Waits for its batch when dropped (only while unwinding: the normal
/// path waits itself).
struct WaitForBatch<'a>(&'a Arc<Batch>);

impl Drop for WaitForBatch<'_> {
    fn drop(&mut self) {
        self.0.cancel();
        let _ = self.0.wait();
    }
}

/// How many proofs the default pool ([`ProverPool::global`]) has made on
/// each device, by CUDA ordinal: where the bellperson-shaped functions'
/// proofs went. Empty before the pool is first used.
pub fn proofs_by_device() -> Vec<u64> {
    let Some(pool) = GLOBAL.lock().clone() else {
        return Vec::new();
    };
    let mut counts = Vec::new();
    for worker in pool.stats() {
        if let Some(ordinal) = worker.ordinal {
            if counts.len() <= ordinal {
                counts.resize(ordinal + 1, 0);
            }
            counts[ordinal] += worker.proofs;
        }
    }
    counts
}
