//! The pool's own failures; they reach callers as [`crate::Error::Pool`].

use crate::Error;

/// A failure of the prover pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// One job of a batch failed; `index` is its position in the batch.
    #[error("job {index} of the batch failed: {source}")]
    Job {
        /// The job's position in the batch (its assignment's or circuit's index).
        index: usize,
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
    /// A worker failed a job as a device does (an injected failure or a
    /// panic inside the prover); the job is retried on another worker.
    #[error("worker {worker} failed: {message}")]
    WorkerFailed {
        /// The worker's label, e.g. "gpu 1" or "cpu 0".
        worker: String,
        /// What went wrong.
        message: String,
    },
    /// Another job of the same batch failed first, so this one was not
    /// proved ([`ProverPool::prove_batch`](super::ProverPool::prove_batch)
    /// stops a batch at its first failure).
    #[error("not proved: another job of the batch failed")]
    Cancelled,
    /// A pool was asked for with no workers.
    #[error("a prover pool needs at least one worker")]
    NoWorkers,
    /// The same device was named twice for one pool.
    #[error("device {0} is named twice")]
    DuplicateDevice(usize),
    /// A worker thread could not be started.
    #[error("cannot start a worker thread: {0}")]
    Spawn(String),
}

impl PoolError {
    /// Wraps `source` as the failure of job `index`.
    pub(crate) fn job(index: usize, source: Error) -> Error {
        Error::Pool(PoolError::Job {
            index,
            source: Box::new(source),
        })
    }
}

/// Whether `error` says the worker (its device) failed rather than the job
/// itself: such a job is retried on another worker. A key that does not fit,
/// a synthesis failure and the like fail the same way anywhere, so they are
/// not retried.
pub(crate) fn is_worker_failure(error: &Error) -> bool {
    match error {
        Error::Pool(PoolError::WorkerFailed { .. }) => true,
        #[cfg(feature = "cuda")]
        Error::Gpu(_) => true,
        _ => false,
    }
}

/// Whether `error` says the device ran out of memory.
pub(crate) fn is_out_of_device_memory(error: &Error) -> bool {
    match error {
        #[cfg(feature = "cuda")]
        Error::Gpu(error) => error.is_out_of_memory(),
        _ => false,
    }
}
