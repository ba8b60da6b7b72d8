//! How the pool's workers read a failure: theirs (retried elsewhere) or
//! the job's own. The pool's error type, [`PoolError`](crate::error::PoolError),
//! sits with the crate's other errors.

use crate::error::PoolError;
use crate::Error;

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
