//! What each worker has done: proofs, busy time, bytes uploaded, failures.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// One worker's counters, as [`ProverPool::stats`](super::ProverPool::stats)
/// returns them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// The worker's index in the pool (what
    /// [`inject_failures`](super::ProverPool::inject_failures) and
    /// [`JobReport::worker`](super::JobReport::worker) name).
    pub worker: usize,
    /// "gpu ORDINAL (NAME)" or "cpu INDEX".
    pub label: String,
    /// The CUDA ordinal of a GPU worker's device; `None` for a CPU worker.
    pub ordinal: Option<usize>,
    /// Proofs it completed.
    pub proofs: u64,
    /// Time with at least one job in hand (successful or not), from taking
    /// a job to handing back its result; a GPU worker's overlapping jobs
    /// (the next one starts before the one under way is finished) count
    /// once.
    pub busy: Duration,
    /// Bytes copied to its device: each proving key uploaded
    /// (`GpuProvingKey::device_bytes`) plus each proof's A, B and C
    /// evaluations (3 · domain size · 32 bytes). Zero for a CPU worker.
    pub bytes_uploaded: u64,
    /// Proving keys uploaded to its device (a key stays resident for the
    /// next job with the same key). Zero for a CPU worker.
    pub key_uploads: u64,
    /// Attempts that failed because the worker (its device) failed; each
    /// such job was retried. Errors of the job itself (a key that does not
    /// fit, a failed synthesis) are not counted.
    pub failures: u64,
    /// The text of the latest such failure.
    pub last_failure: Option<String>,
}

/// What one finished attempt adds to a worker's counters.
pub(super) enum Attempt<'a> {
    /// A proof, with the bytes and keys it uploaded.
    Proved {
        /// Bytes copied to the device.
        bytes_uploaded: u64,
        /// Keys uploaded.
        key_uploads: u64,
    },
    /// The worker failed; the text of the error.
    WorkerFailed(&'a str),
    /// The job's own error (not the worker's).
    JobFailed,
}

/// A worker's counters shared between its thread and the pool, and the
/// failures injected for tests.
pub(super) struct WorkerCell {
    stats: Mutex<WorkerStats>,
    injected_failures: AtomicU32,
}

impl WorkerCell {
    pub fn new(worker: usize, label: String, ordinal: Option<usize>) -> Self {
        Self {
            stats: Mutex::new(WorkerStats {
                worker,
                label,
                ordinal,
                ..WorkerStats::default()
            }),
            injected_failures: AtomicU32::new(0),
        }
    }

    /// A copy of the counters now.
    pub fn snapshot(&self) -> WorkerStats {
        self.stats.lock().clone()
    }

    /// The worker's label.
    pub fn label(&self) -> String {
        self.stats.lock().label.clone()
    }

    /// Adds one attempt that took `busy`.
    pub fn record(&self, busy: Duration, attempt: Attempt<'_>) {
        let mut stats = self.stats.lock();
        stats.busy += busy;
        match attempt {
            Attempt::Proved {
                bytes_uploaded,
                key_uploads,
            } => {
                stats.proofs += 1;
                stats.bytes_uploaded += bytes_uploaded;
                stats.key_uploads += key_uploads;
            }
            Attempt::WorkerFailed(message) => {
                stats.failures += 1;
                stats.last_failure = Some(message.to_owned());
            }
            Attempt::JobFailed => {}
        }
    }

    /// Makes the next `count` attempts fail (added to any still pending).
    pub fn inject_failures(&self, count: u32) {
        self.injected_failures.fetch_add(count, Ordering::SeqCst);
    }

    /// Whether this attempt is to fail, using up one injected failure.
    pub fn take_injected_failure(&self) -> bool {
        self.injected_failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}
