//! A pool of provers over many devices: one worker thread per GPU (feature
//! `cuda`) or per CPU prover, all taking jobs from one shared queue in
//! order, the next free worker taking the next job.
//!
//! - Batches from many threads at once share the workers (a
//!   [`ProverPool`] is a cheap handle: clone it into each thread); each
//!   call gets its proofs back in input order.
//! - [`Priority::Urgent`] jobs, submitted through
//!   [`ProverPool::with_priority`], go ahead of queued batch work, and on a
//!   GPU ahead of the device's other users (`DeviceMutex::lock_urgent`).
//! - A GPU worker keeps the proving key resident on its device between jobs
//!   (at most two keys per device) and uploads only each proof's inputs.
//! - [`ProverPool::prove_circuits`] synthesizes on the calling side, in
//!   parallel, and queues each circuit as soon as it is ready, so synthesis
//!   overlaps the devices' work.
//! - A job whose worker fails (a device error) is retried on another
//!   worker; the failure shows in [`ProverPool::stats`]. A job that fails
//!   anywhere (a key that does not fit, a failed synthesis) is not retried.
//!
//! ```
//! # use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
//! # use blstrs::Scalar;
//! # struct Square(Option<Scalar>);
//! # impl Circuit<Scalar> for Square {
//! #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//! #         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
//! #         let y = cs.alloc_input(|| "y", || self.0.map(|x| x * x).ok_or(SynthesisError::AssignmentMissing))?;
//! #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//! #         Ok(())
//! #     }
//! # }
//! use std::sync::Arc;
//! use groth16_gpu::pool::Priority;
//! use groth16_gpu::{generate_random_parameters, prepare_verifying_key, verify_proof, ProverPool};
//!
//! let key = Arc::new(generate_random_parameters(Square(None), &mut rand_core::OsRng)?);
//! let pool = ProverPool::new()?; // every GPU, else one CPU worker
//! let circuits: Vec<_> = (1..=4u64).map(|x| Square(Some(Scalar::from(x)))).collect();
//! let (r_s, s_s) = (vec![Scalar::from(5u64); 4], vec![Scalar::from(7u64); 4]);
//! let proofs = pool.prove_circuits(&key, None, circuits, r_s, s_s)?;
//!
//! let pvk = prepare_verifying_key(&key.vk);
//! for (x, proof) in (1..=4u64).zip(&proofs) {
//!     assert!(verify_proof(&pvk, proof, &[Scalar::from(x * x)])?);
//! }
//! // A proof with a deadline goes ahead of queued batch work.
//! let urgent = pool.with_priority(Priority::Urgent).prove_circuits(
//!     &key, None, vec![Square(Some(Scalar::from(9u64)))], vec![Scalar::from(1u64)], vec![Scalar::from(2u64)])?;
//! assert!(verify_proof(&pvk, &urgent[0], &[Scalar::from(81u64)])?);
//! for worker in pool.stats() {
//!     println!("{}: {} proofs in {:?}", worker.label, worker.proofs, worker.busy);
//! }
//! # Ok::<(), groth16_gpu::Error>(())
//! ```

mod batch;
mod engine;
mod failures;
#[cfg(feature = "cuda")]
mod gpu;
mod lent;
mod queue;
mod stats;
mod submit;
mod work;
mod worker;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use crate::error::PoolError;
pub use crate::groth16::Priority;
pub use batch::JobReport;
pub use lent::proofs_by_device;
pub use stats::WorkerStats;

use batch::Batch;
use engine::Engine;
use queue::JobQueue;
use worker::WorkerHandle;

use crate::Error;

/// A handle on worker threads proving jobs from one shared queue; see the
/// [module documentation](self). Cloning is cheap and shares the workers
/// (pass clones to other threads); each handle submits at its own
/// [`Priority`] and retry limit. When the last handle drops, the workers
/// finish the jobs they hold and are joined.
#[derive(Clone)]
pub struct ProverPool {
    shared: Arc<Shared>,
    priority: Priority,
    retry_limit: u32,
    cpu_fallback: bool,
}

/// What every handle of one pool shares.
struct Shared {
    queue: Arc<JobQueue>,
    workers: Vec<WorkerHandle>,
    /// Pool-wide order of finished jobs ([`JobReport::completed`]).
    sequence: Arc<AtomicU64>,
}

impl ProverPool {
    /// Retries a job gets after worker failures, unless
    /// [`with_retry_limit`](Self::with_retry_limit) says otherwise.
    pub const DEFAULT_RETRY_LIMIT: u32 = 3;

    /// A worker per GPU this process sees (feature `cuda`, the devices of
    /// `DeviceMutex::all`), else one CPU worker.
    pub fn new() -> Result<Self, Error> {
        #[cfg(feature = "cuda")]
        match crate::device::DeviceMutex::all() {
            Ok(devices) if !devices.is_empty() => return Self::on_devices(devices.iter()),
            Ok(_) => {}
            Err(error) => log::warn!("no usable CUDA device ({error}); proving on the CPU"),
        }
        Self::cpu(1)
    }

    /// `workers` CPU workers. Each CPU proof already uses every core, so
    /// more than one worker adds no speed; several are for tests of the
    /// scheduling without a GPU.
    pub fn cpu(workers: usize) -> Result<Self, Error> {
        Self::start((0..workers).map(|_| Engine::Cpu).collect())
    }

    /// A worker per GPU this process sees (feature `cuda`);
    /// [`GpuError::NoDevice`] when there is none.
    ///
    /// [`GpuError::NoDevice`]: crate::device::GpuError::NoDevice
    #[cfg(feature = "cuda")]
    pub fn all_gpus() -> Result<Self, Error> {
        let devices = crate::device::DeviceMutex::all()?;
        if devices.is_empty() {
            return Err(crate::device::GpuError::NoDevice.into());
        }
        Self::on_devices(devices.iter())
    }

    /// A worker for each GPU named by its CUDA ordinal (feature `cuda`), in
    /// that order. An ordinal past the devices, or named twice, is an error.
    #[cfg(feature = "cuda")]
    pub fn gpus(ordinals: &[usize]) -> Result<Self, Error> {
        use crate::device::{DeviceMutex, GpuError};
        let devices = DeviceMutex::all()?;
        if devices.is_empty() {
            return Err(GpuError::NoDevice.into());
        }
        let mut chosen = Vec::with_capacity(ordinals.len());
        for (i, &ordinal) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(&ordinal) {
                return Err(PoolError::DuplicateDevice(ordinal).into());
            }
            chosen.push(devices.get(ordinal).ok_or(GpuError::InvalidOrdinal {
                ordinal,
                count: devices.len(),
            })?);
        }
        Self::on_devices(chosen.into_iter())
    }

    #[cfg(feature = "cuda")]
    fn on_devices(
        devices: impl Iterator<Item = &'static crate::device::DeviceMutex>,
    ) -> Result<Self, Error> {
        Self::start(
            devices
                .map(|device| Engine::Gpu(gpu::GpuEngine::new(device)))
                .collect(),
        )
    }

    /// Starts a worker thread per engine.
    fn start(engines: Vec<Engine>) -> Result<Self, Error> {
        if engines.is_empty() {
            return Err(PoolError::NoWorkers.into());
        }
        // Built up in place: if a thread cannot start, dropping `shared`
        // joins the ones already running.
        let mut shared = Shared {
            queue: Arc::new(JobQueue::new(engines.len())),
            workers: Vec::with_capacity(engines.len()),
            sequence: Arc::new(AtomicU64::new(0)),
        };
        for (index, engine) in engines.into_iter().enumerate() {
            let worker = worker::spawn(index, engine, shared.queue.clone())?;
            shared.workers.push(worker);
        }
        Ok(Self {
            shared: Arc::new(shared),
            priority: Priority::Normal,
            retry_limit: Self::DEFAULT_RETRY_LIMIT,
            cpu_fallback: false,
        })
    }

    /// A handle on the same workers that submits at `priority`.
    pub fn with_priority(&self, priority: Priority) -> Self {
        Self {
            priority,
            ..self.clone()
        }
    }

    /// This handle, retrying a job up to `retries` times after worker
    /// failures before its last failure becomes its result.
    pub fn with_retry_limit(mut self, retries: u32) -> Self {
        self.retry_limit = retries;
        self
    }

    /// This handle, with a job that has failed on the workers as often as
    /// its retry limit allows proved on the CPU by the last worker instead
    /// of failing (off by default; on for [`ProverPool::global`]).
    pub fn with_cpu_fallback(mut self, fallback: bool) -> Self {
        self.cpu_fallback = fallback;
        self
    }

    /// The priority this handle submits at.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    /// Jobs waiting for a worker now (from every handle).
    pub fn queued(&self) -> usize {
        self.shared.queue.len()
    }

    /// Each worker's counters, in worker order.
    pub fn stats(&self) -> Vec<WorkerStats> {
        self.shared
            .workers
            .iter()
            .map(|w| w.cell.snapshot())
            .collect()
    }

    /// Test hook: worker `worker`'s next `count` attempts fail as if its
    /// device had failed. Panics if there is no such worker.
    #[doc(hidden)]
    pub fn inject_failures(&self, worker: usize, count: u32) {
        self.shared.workers[worker].cell.inject_failures(count);
    }

    /// Test hook: while paused, workers finish what they hold and take no
    /// new job (dropping the pool still drains the queue).
    #[doc(hidden)]
    pub fn pause(&self, paused: bool) {
        self.shared.queue.set_paused(paused);
    }

    fn new_batch(&self, len: usize, fail_fast: bool) -> Arc<Batch> {
        Batch::new(len, fail_fast, self.shared.sequence.clone())
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.queue.close();
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                if thread.join().is_err() {
                    log::error!("a prover pool worker thread panicked");
                }
            }
        }
    }
}

impl std::fmt::Debug for ProverPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProverPool")
            .field("workers", &self.stats())
            .field("queued", &self.queued())
            .field("priority", &self.priority)
            .field("retry_limit", &self.retry_limit)
            .field("cpu_fallback", &self.cpu_fallback)
            .finish()
    }
}
