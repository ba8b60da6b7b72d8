//! A worker thread: takes the next job it may take from the shared queue,
//! proves it, hands back the result; a job it fails as a device does goes
//! back to the queue for another worker, up to the job's retry limit.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::engine::{Engine, Proved};
use super::error::is_worker_failure;
use super::queue::{Job, JobQueue};
use super::stats::{Attempt, WorkerCell};
use super::PoolError;
use crate::error::panic_message;
use crate::Error;

/// A running worker: its thread and its counters.
pub(super) struct WorkerHandle {
    pub cell: Arc<WorkerCell>,
    pub thread: Option<JoinHandle<()>>,
}

/// Starts worker `index` on a thread of its own.
pub(super) fn spawn(
    index: usize,
    engine: Engine,
    queue: Arc<JobQueue>,
) -> Result<WorkerHandle, Error> {
    let label = engine.label(index);
    let cell = Arc::new(WorkerCell::new(index, label.clone(), engine.ordinal()));
    let worker = Worker {
        index,
        engine,
        queue,
        cell: cell.clone(),
    };
    let thread = std::thread::Builder::new()
        .name(format!("groth16-pool {label}"))
        .spawn(move || worker.run())
        .map_err(|e| PoolError::Spawn(e.to_string()))?;
    Ok(WorkerHandle {
        cell,
        thread: Some(thread),
    })
}

struct Worker {
    index: usize,
    engine: Engine,
    queue: Arc<JobQueue>,
    cell: Arc<WorkerCell>,
}

impl Worker {
    fn run(mut self) {
        while let Some(job) = self.queue.pop_for(self.index) {
            // A panic here (outside the prover, which `attempt` guards)
            // drops the job, whose reply then reports it; the worker goes on.
            let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.take(job)));
            if taken.is_err() {
                log::error!("{} panicked while handling a job", self.cell.label());
            }
        }
    }

    /// One attempt at `job`, and what follows from it.
    fn take(&mut self, mut job: Job) {
        if job.reply.batch().is_cancelled() {
            let attempts = job.attempts;
            job.reply
                .send(Err(PoolError::Cancelled.into()), None, attempts);
            return;
        }
        let start = Instant::now();
        job.attempts += 1;
        let outcome = self.attempt(&job);
        let busy = start.elapsed();
        match outcome {
            Ok(Proved {
                proof,
                bytes_uploaded,
                key_uploads,
            }) => {
                let attempt = Attempt::Proved {
                    bytes_uploaded,
                    key_uploads,
                };
                self.cell.record(busy, attempt);
                job.reply.send(Ok(proof), Some(self.index), job.attempts);
            }
            Err(error) if is_worker_failure(&error) => {
                let message = error.to_string();
                log::warn!(
                    "{} failed a job (attempt {}): {message}",
                    self.cell.label(),
                    job.attempts
                );
                self.cell.record(busy, Attempt::WorkerFailed(&message));
                if job.attempts > job.retry_limit {
                    job.reply.send(Err(error), Some(self.index), job.attempts);
                } else {
                    if !job.failed_on.contains(&self.index) {
                        job.failed_on.push(self.index);
                    }
                    self.queue.push_front(job);
                }
            }
            Err(error) => {
                self.cell.record(busy, Attempt::JobFailed);
                job.reply.send(Err(error), Some(self.index), job.attempts);
            }
        }
    }

    /// Proves `job` unless a failure was injected; a panic in the prover
    /// counts as the worker failing.
    fn attempt(&mut self, job: &Job) -> Result<Proved, Error> {
        let failed = |message: String| -> Error {
            PoolError::WorkerFailed {
                worker: self.cell.label(),
                message,
            }
            .into()
        };
        if self.cell.take_injected_failure() {
            return Err(failed("injected failure (test hook)".into()));
        }
        let engine = &mut self.engine;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.prove(&job.work)))
            .unwrap_or_else(|payload| {
                Err(failed(format!(
                    "the prover panicked: {}",
                    panic_message(&*payload)
                )))
            })
    }
}
