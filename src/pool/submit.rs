//! Submitting work: a batch's jobs go into the queue (circuits synthesized
//! on the calling side, in parallel, each queued as soon as it is ready),
//! and the caller waits for every result, in input order.

use std::sync::{mpsc, Arc};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use rayon::prelude::*;

use super::batch::{Batch, JobReport, Reply};
use super::queue::Job;
use super::work::{JobInput, KeyRef, Work};
use super::{PoolError, ProverPool};
use crate::error::catch_circuit_panic;
use crate::groth16::{check_batch_lengths, check_key_fits, key_digest, Proof};
use crate::params::ProvingKey;
use crate::synthesis::{synthesize, Assignment, CircuitShape};
use crate::Error;

/// Submitting work. Every method blocks until each job of its batch has a
/// result; many threads may call at once (on one handle or on clones).
impl ProverPool {
    /// Proves each assignment with its `r` and `s`, at this handle's
    /// [`Priority`](super::Priority); the proofs in input order. The first
    /// job that fails (after retries on other workers when its worker
    /// failed) fails the call with [`PoolError::Job`] naming it; jobs of the
    /// batch not started by then are not proved.
    pub fn prove_batch(
        &self,
        key: &Arc<ProvingKey>,
        assignments: Vec<Assignment>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
    ) -> Result<Vec<Proof>, Error> {
        proofs_or_first_error(self.run_assignments(key, assignments, r_s, s_s, true)?)
    }

    /// Proves each assignment on its own: a job that fails fails only its
    /// own entry. The outer error is for arguments that do not fit (the
    /// lengths of `r_s` and `s_s`).
    pub fn prove_batch_isolated(
        &self,
        key: &Arc<ProvingKey>,
        assignments: Vec<Assignment>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
    ) -> Result<Vec<Result<Proof, Error>>, Error> {
        let reports = self.prove_batch_reports(key, assignments, r_s, s_s)?;
        Ok(reports.into_iter().map(|report| report.result).collect())
    }

    /// [`prove_batch_isolated`](Self::prove_batch_isolated), with which
    /// worker proved each job, after how many attempts, and in what order
    /// the jobs finished.
    pub fn prove_batch_reports(
        &self,
        key: &Arc<ProvingKey>,
        assignments: Vec<Assignment>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
    ) -> Result<Vec<JobReport>, Error> {
        self.run_assignments(key, assignments, r_s, s_s, false)
    }

    /// Synthesizes the circuits in parallel on this side (through `shape`
    /// when given, else directly) and queues each as soon as it is ready,
    /// so synthesis overlaps proving; the proofs in input order. Through a
    /// shape, a window's witnesses are computed side by side and each is
    /// evaluated (A, B, C, one circuit at a time) as soon as it is ready, so
    /// the first job is queued early. A circuit
    /// that fails or panics in synthesis fails the call as
    /// [`prove_batch`](Self::prove_batch) does. Synthesis runs at most a
    /// window ahead of the workers (the larger of rayon's thread count and
    /// twice the workers), which bounds the assignments held in memory.
    ///
    /// Call it from outside rayon's thread pool: it waits for the workers,
    /// and CPU workers prove with rayon.
    pub fn prove_circuits<C: Circuit<Scalar> + Send>(
        &self,
        key: &Arc<ProvingKey>,
        shape: Option<&CircuitShape>,
        circuits: Vec<C>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
    ) -> Result<Vec<Proof>, Error> {
        proofs_or_first_error(self.run_circuits(key, shape, circuits, r_s, s_s, true)?)
    }

    /// [`prove_circuits`](Self::prove_circuits) with each job on its own,
    /// as [`prove_batch_reports`](Self::prove_batch_reports) reports them.
    pub fn prove_circuits_reports<C: Circuit<Scalar> + Send>(
        &self,
        key: &Arc<ProvingKey>,
        shape: Option<&CircuitShape>,
        circuits: Vec<C>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
    ) -> Result<Vec<JobReport>, Error> {
        self.run_circuits(key, shape, circuits, r_s, s_s, false)
    }

    fn run_assignments(
        &self,
        key: &Arc<ProvingKey>,
        assignments: Vec<Assignment>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
        fail_fast: bool,
    ) -> Result<Vec<JobReport>, Error> {
        check_batch_lengths(assignments.len(), r_s.len(), s_s.len())?;
        let batch = self.new_batch(assignments.len(), fail_fast);
        let key = SubmittedKey::shared(key);
        let jobs = assignments.into_iter().zip(r_s.into_iter().zip(s_s));
        for (index, (assignment, (r, s))) in jobs.enumerate() {
            let input = Ok(JobInput::Assignment(assignment));
            self.submit(&batch, index, &key, input, r, s);
        }
        Ok(batch.wait())
    }

    fn run_circuits<C: Circuit<Scalar> + Send>(
        &self,
        key: &Arc<ProvingKey>,
        shape: Option<&CircuitShape>,
        circuits: Vec<C>,
        r_s: Vec<Scalar>,
        s_s: Vec<Scalar>,
        fail_fast: bool,
    ) -> Result<Vec<JobReport>, Error> {
        check_batch_lengths(circuits.len(), r_s.len(), s_s.len())?;
        let batch = self.new_batch(circuits.len(), fail_fast);
        let key = &SubmittedKey::shared(key);
        let window = rayon::current_num_threads().max(2 * self.workers());
        let mut jobs = circuits
            .into_iter()
            .zip(r_s.into_iter().zip(s_s))
            .enumerate();
        loop {
            let chunk: Vec<_> = jobs.by_ref().take(window).collect();
            if chunk.is_empty() {
                break;
            }
            // Keep the workers fed, no more: synthesize the next window once
            // at most one job per worker is left waiting.
            batch.wait_for_queue_at_most(self.workers());
            match shape {
                Some(shape) => self.queue_through_shape(&batch, key, shape, chunk),
                None => chunk
                    .into_par_iter()
                    .for_each(|(index, (circuit, (r, s)))| {
                        let input = unless_cancelled(&batch, || {
                            catch_circuit_panic(|| synthesize(circuit))
                        })
                        .map(JobInput::Assignment);
                        self.submit(&batch, index, key, input, r, s);
                    }),
            }
        }
        Ok(batch.wait())
    }

    /// One window through a recorded shape: the witnesses side by side on
    /// rayon, each evaluated (A, B, C over every core) and queued on this
    /// thread as soon as it is ready, one evaluation at a time. Cheap
    /// witnesses (field-heavy circuits) then reach the devices one
    /// evaluation apart, in about input order; expensive ones (Filecoin's
    /// hash gadgets) are evaluated while the others are still computed.
    fn queue_through_shape<C: Circuit<Scalar> + Send>(
        &self,
        batch: &Arc<Batch>,
        key: &SubmittedKey,
        shape: &CircuitShape,
        chunk: Vec<CircuitJob<C>>,
    ) {
        let (ready, arrivals) = mpsc::channel();
        std::thread::scope(|threads| {
            // A thread of its own waits for the rayon tasks, so this one is
            // free to evaluate (and no rayon worker blocks on the channel).
            threads.spawn(move || {
                chunk
                    .into_par_iter()
                    .for_each_with(ready, |ready, (index, (circuit, r_s))| {
                        let witness = unless_cancelled(batch, || {
                            catch_circuit_panic(|| shape.witness(circuit))
                        });
                        // The receiver lives until every sender is gone.
                        let _ = ready.send((index, witness, r_s));
                    });
            });
            for (index, witness, (r, s)) in arrivals {
                let input = witness
                    .and_then(|witness| unless_cancelled(batch, || shape.assign(witness)))
                    .map(JobInput::Assignment);
                self.submit(batch, index, key, input, r, s);
            }
        });
    }

    /// Queues job `index`, or fills its slot at once: a failed synthesis, a
    /// key that does not fit (no worker would do better), a cancelled batch.
    /// Queues job `index` of `batch`, or answers it at once where its input
    /// failed, the batch was cancelled or the key does not fit it.
    pub(super) fn submit(
        &self,
        batch: &Arc<Batch>,
        index: usize,
        key: &SubmittedKey,
        input: Result<JobInput, Error>,
        r: Scalar,
        s: Scalar,
    ) {
        let reply = Reply::new(batch.clone(), index);
        let checked = input.and_then(|input| {
            if batch.is_cancelled() {
                return Err(PoolError::Cancelled.into());
            }
            if let JobInput::Assignment(assignment) = &input {
                check_key_fits(key.key.get(), assignment)?;
            }
            Ok(input)
        });
        match checked {
            Err(error) => reply.send(Err(error), None, 0),
            Ok(input) => self.shared.queue.push(Job {
                work: Work {
                    key: key.key.again(),
                    key_digest: key.digest,
                    input,
                    r,
                    s,
                },
                priority: self.priority,
                failed_on: Vec::new(),
                attempts: 0,
                retry_limit: self.retry_limit,
                cpu_fallback: self.cpu_fallback,
                reply,
            }),
        }
    }
}

/// A call's key, as its jobs will hold it, and its digest (computed once).
pub(super) struct SubmittedKey {
    pub key: KeyRef,
    pub digest: u64,
}

impl SubmittedKey {
    pub fn shared(key: &Arc<ProvingKey>) -> Self {
        Self {
            digest: key_digest(key),
            key: KeyRef::Shared(key.clone()),
        }
    }
}

type CircuitJob<C> = (usize, (C, (Scalar, Scalar)));

/// `work()`, unless an earlier error stopped the batch.
fn unless_cancelled<T>(batch: &Batch, work: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    if batch.is_cancelled() {
        Err(PoolError::Cancelled.into())
    } else {
        work()
    }
}

/// The proofs, or the first job's error by input order (an error of the
/// job itself rather than a cancellation it caused).
fn proofs_or_first_error(reports: Vec<JobReport>) -> Result<Vec<Proof>, Error> {
    let mut proofs = Vec::with_capacity(reports.len());
    let mut first_cancelled = None;
    for (index, report) in reports.into_iter().enumerate() {
        match report.result {
            Ok(proof) => proofs.push(proof),
            Err(Error::Pool(PoolError::Cancelled)) => {
                first_cancelled.get_or_insert(index);
            }
            Err(error) => return Err(PoolError::job(index, error)),
        }
    }
    match first_cancelled {
        Some(index) => Err(PoolError::job(index, PoolError::Cancelled.into())),
        None => Ok(proofs),
    }
}
