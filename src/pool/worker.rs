//! A worker thread: takes the next job it may take from the shared queue,
//! proves it, hands back the result; a job it fails as a device does goes
//! back to the queue for another worker, up to the job's retry limit. A
//! GPU worker starts its next job before waiting for the one under way.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::engine::{Engine, Started};
use super::failures::{is_out_of_device_memory, is_worker_failure};
use super::queue::{Job, JobQueue};
use super::stats::{Attempt, WorkerCell};
use super::work::Proved;
use super::PoolError;
use crate::error::panic_message;
use crate::groth16::prove;
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
        settled_at: Instant::now(),
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
    /// When the last job in hand was settled: busy time counts the time
    /// with at least one job in hand once, however many overlap.
    settled_at: Instant,
}

/// A job whose proof is under way on this worker's engine.
struct Running {
    job: Job,
    started: Started,
    since: Instant,
}

impl Worker {
    /// Takes jobs until the queue closes. A GPU engine keeps two proofs in
    /// flight: the next one is started (its inputs uploaded, its host work
    /// done, its lanes queued on the device) before the one under way is
    /// waited for, so the device is not idle between proofs.
    fn run(mut self) {
        let mut running: Option<Running> = None;
        loop {
            // A panic here (outside the prover, which `start` and
            // `complete` guard) drops the job, whose reply then reports it;
            // the worker goes on.
            let step =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.step(&mut running)));
            match step {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => log::error!("{} panicked while handling a job", self.cell.label()),
            }
        }
    }

    /// One turn: start the next job (settling the one under way after it),
    /// or settle the one under way when no job is waiting. False once the
    /// queue is closed and nothing is in hand.
    fn step(&mut self, running: &mut Option<Running>) -> bool {
        let next = if running.is_some() {
            self.queue.try_pop_for(self.index)
        } else {
            self.queue.pop_for(self.index)
        };
        match next {
            Some(job) => {
                let started = self.begin(job, running);
                if let Some(earlier) = running.take() {
                    self.complete(earlier);
                }
                *running = started;
                true
            }
            None => match running.take() {
                Some(earlier) => {
                    self.complete(earlier);
                    true
                }
                None => false,
            },
        }
    }

    /// Starts `job`; a job the engine finished at once (or that failed to
    /// start) is settled here. When a second proof does not fit beside the
    /// one under way, that one is finished first and the start tried again.
    fn begin(&mut self, mut job: Job, running: &mut Option<Running>) -> Option<Running> {
        if job.reply.batch().is_cancelled() {
            let attempts = job.attempts;
            job.reply
                .send(Err(PoolError::Cancelled.into()), None, attempts);
            return None;
        }
        let since = Instant::now();
        job.attempts += 1;
        let mut started = self.start(&job);
        if matches!(&started, Err(error) if is_out_of_device_memory(error)) {
            if let Some(earlier) = running.take() {
                self.complete(earlier);
                started = self.start(&job);
            }
        }
        match started {
            Ok(Started::Done(proved)) => {
                self.settle(job, Ok(*proved), since);
                None
            }
            #[cfg(feature = "cuda")]
            Ok(started @ Started::Gpu(_)) => Some(Running {
                job,
                started,
                since,
            }),
            Err(error) => {
                self.settle(job, Err(error), since);
                None
            }
        }
    }

    /// Starts `job` on the engine unless a failure was injected; a panic in
    /// the prover counts as the worker failing.
    fn start(&mut self, job: &Job) -> Result<Started, Error> {
        if self.cell.take_injected_failure() {
            return Err(worker_failed(
                &self.cell,
                "injected failure (test hook)".into(),
            ));
        }
        let engine = &mut self.engine;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            engine.start(&job.work, job.priority)
        }))
        .unwrap_or_else(|payload| Err(prover_panicked(&self.cell, &*payload)))
    }

    /// Waits for a running job and settles it.
    fn complete(&mut self, running: Running) {
        let Running {
            job,
            started,
            since,
        } = running;
        let engine = &mut self.engine;
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.finish(started)))
                .unwrap_or_else(|payload| Err(prover_panicked(&self.cell, &*payload)));
        self.settle(job, outcome, since);
    }

    /// Hands back a job's result, or queues it again after a failure of
    /// this worker (up to the job's retry limit).
    fn settle(&mut self, mut job: Job, outcome: Result<Proved, Error>, since: Instant) {
        let now = Instant::now();
        let busy = now.saturating_duration_since(since.max(self.settled_at));
        self.settled_at = now;
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
                if job.attempts > job.retry_limit && job.cpu_fallback {
                    log::warn!("proving the job on the CPU after {} attempts", job.attempts);
                    let work = &job.work;
                    let proof = work
                        .input
                        .to_assignment()
                        .and_then(|assignment| prove(work.key.get(), &assignment, work.r, work.s));
                    job.reply.send(proof, None, job.attempts);
                } else if job.attempts > job.retry_limit {
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
}

fn worker_failed(cell: &WorkerCell, message: String) -> Error {
    PoolError::WorkerFailed {
        worker: cell.label(),
        message,
    }
    .into()
}

fn prover_panicked(cell: &WorkerCell, payload: &(dyn std::any::Any + Send)) -> Error {
    worker_failed(
        cell,
        format!("the prover panicked: {}", panic_message(payload)),
    )
}
