//! One call's jobs: a result slot per job, filled exactly once, and the
//! caller waiting until every slot is filled.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::PoolError;
use crate::groth16::Proof;
use crate::Error;

/// How one job of a batch ended.
#[derive(Debug)]
pub struct JobReport {
    /// The proof, or why there is none.
    pub result: Result<Proof, Error>,
    /// The worker (its index in [`ProverPool::stats`](super::ProverPool::stats))
    /// whose attempt gave the result; `None` when no worker took the job (a
    /// failed synthesis, a key that does not fit, a cancelled job).
    pub worker: Option<usize>,
    /// Attempts made: 1 when the first worker succeeded, more after worker
    /// failures, 0 when no worker took the job.
    pub attempts: u32,
    /// The pool-wide order in which results were handed back: a job with a
    /// smaller number finished earlier, whichever batch it belongs to.
    pub completed: u64,
}

struct BatchState {
    slots: Vec<Option<JobReport>>,
    open: usize,
    queued: usize,
    cancelled: bool,
}

/// The shared state of one batch between its caller and the workers.
pub(super) struct Batch {
    state: Mutex<BatchState>,
    changed: Condvar,
    /// Stop at the first error: jobs not yet started are cancelled.
    fail_fast: bool,
    /// The pool's completion counter.
    sequence: Arc<AtomicU64>,
}

impl Batch {
    pub fn new(len: usize, fail_fast: bool, sequence: Arc<AtomicU64>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(BatchState {
                slots: (0..len).map(|_| None).collect(),
                open: len,
                queued: 0,
                cancelled: false,
            }),
            changed: Condvar::new(),
            fail_fast,
            sequence,
        })
    }

    /// Fills slot `index`; a slot already filled keeps its first result.
    pub fn deliver(
        &self,
        index: usize,
        result: Result<Proof, Error>,
        worker: Option<usize>,
        attempts: u32,
    ) {
        let mut state = self.state.lock();
        if state.slots[index].is_some() {
            return;
        }
        if self.fail_fast && result.is_err() {
            state.cancelled = true;
        }
        let completed = self.sequence.fetch_add(1, Ordering::SeqCst);
        state.slots[index] = Some(JobReport {
            result,
            worker,
            attempts,
            completed,
        });
        state.open -= 1;
        self.changed.notify_all();
    }

    /// A job of this batch went into the queue.
    pub fn note_queued(&self) {
        self.state.lock().queued += 1;
    }

    /// A worker took a job of this batch out of the queue.
    pub fn note_taken(&self) {
        let mut state = self.state.lock();
        state.queued -= 1;
        self.changed.notify_all();
    }

    /// Whether an earlier error stopped the batch.
    pub fn cancel(&self) {
        self.state.lock().cancelled = true;
        self.changed.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.state.lock().cancelled
    }

    /// Waits until at most `limit` of this batch's jobs sit in the queue;
    /// false when the batch was cancelled instead.
    pub fn wait_for_queue_at_most(&self, limit: usize) -> bool {
        let mut state = self.state.lock();
        while state.queued > limit && !state.cancelled {
            self.block(&mut state);
        }
        !state.cancelled
    }

    /// Waits for the batch to change. A rayon thread runs
    /// queued rayon work meanwhile: the workers' CPU proofs use that pool,
    /// and callers that fill it (a `par_iter` of `create_proof`s) would
    /// otherwise wait for work no thread is left to run.
    fn block(&self, state: &mut MutexGuard<'_, BatchState>) {
        if rayon::current_thread_index().is_none() {
            self.changed.wait(state);
            return;
        }
        let ran = MutexGuard::unlocked(state, rayon::yield_now);
        if ran != Some(rayon::Yield::Executed) {
            self.changed.wait_for(state, Duration::from_millis(1));
        }
    }

    /// Waits for every slot and returns them in job order.
    pub fn wait(&self) -> Vec<JobReport> {
        let mut state = self.state.lock();
        while state.open > 0 {
            self.block(&mut state);
        }
        std::mem::take(&mut state.slots)
            .into_iter()
            .map(|slot| slot.expect("every slot is filled once none is open"))
            .collect()
    }
}

/// The duty to fill one slot. Sent once with the job's result; dropped
/// unsent (a worker thread unwinding, the queue dropped with jobs in it),
/// it fills the slot with an error, so no caller waits forever.
pub(super) struct Reply {
    batch: Arc<Batch>,
    index: usize,
    sent: bool,
}

impl Reply {
    pub fn new(batch: Arc<Batch>, index: usize) -> Self {
        Self {
            batch,
            index,
            sent: false,
        }
    }

    /// The batch the job belongs to.
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// Fills the slot.
    pub fn send(mut self, result: Result<Proof, Error>, worker: Option<usize>, attempts: u32) {
        self.sent = true;
        self.batch.deliver(self.index, result, worker, attempts);
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.sent {
            let error = PoolError::WorkerFailed {
                worker: "pool".into(),
                message: "the job was dropped before it was proved".into(),
            };
            self.batch.deliver(self.index, Err(error.into()), None, 0);
        }
    }
}
