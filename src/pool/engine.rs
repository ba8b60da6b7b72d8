//! What a worker proves with: the CPU prover, or one GPU (feature `cuda`).
//! The scheduling around it is the same for both, which is what lets the
//! pool's ordering, priority and fault handling be tested without a GPU.

use super::work::{Proved, Work};
use crate::groth16::{prove, Priority};
use crate::Error;

/// One worker's prover.
pub(super) enum Engine {
    /// The CPU prover (its MSMs use every core through rayon).
    Cpu,
    /// One device of this process's set, with the keys kept resident there.
    #[cfg(feature = "cuda")]
    Gpu(super::gpu::GpuEngine),
}

/// A job an engine has started; the same engine finishes it.
pub(super) enum Started {
    /// Proved already: the CPU proves in one go, and so does a GPU that
    /// streams a key too large for it.
    Done(Box<Proved>),
    /// Running on the device.
    #[cfg(feature = "cuda")]
    Gpu(super::gpu::InFlight),
}

impl Engine {
    /// "cpu INDEX" or "gpu ORDINAL (NAME)".
    pub fn label(&self, worker: usize) -> String {
        match self {
            Engine::Cpu => format!("cpu {worker}"),
            #[cfg(feature = "cuda")]
            Engine::Gpu(gpu) => gpu.label(),
        }
    }

    /// The CUDA ordinal of a GPU engine's device.
    pub fn ordinal(&self) -> Option<usize> {
        match self {
            Engine::Cpu => None,
            #[cfg(feature = "cuda")]
            Engine::Gpu(gpu) => Some(gpu.ordinal()),
        }
    }

    /// Starts one job: the CPU proves it at once; a GPU uploads its inputs
    /// and leaves its proof running on the device (an urgent job's ahead of
    /// the device's other users).
    pub fn start(&mut self, work: &Work, priority: Priority) -> Result<Started, Error> {
        match self {
            Engine::Cpu => {
                // The CPU waits for no device: the queue's order is all.
                let _ = priority;
                let assignment = work.input.to_assignment()?;
                Ok(Started::Done(Box::new(Proved {
                    proof: prove(work.key.get(), &assignment, work.r, work.s)?,
                    bytes_uploaded: 0,
                    key_uploads: 0,
                })))
            }
            #[cfg(feature = "cuda")]
            Engine::Gpu(gpu) => Ok(match gpu.start(work, priority)? {
                super::gpu::GpuStart::Done(proved) => Started::Done(proved),
                super::gpu::GpuStart::Running(in_flight) => Started::Gpu(in_flight),
            }),
        }
    }

    /// Finishes a job this engine started.
    pub fn finish(&mut self, started: Started) -> Result<Proved, Error> {
        match (self, started) {
            (_, Started::Done(proved)) => Ok(*proved),
            #[cfg(feature = "cuda")]
            (Engine::Gpu(gpu), Started::Gpu(in_flight)) => gpu.finish(in_flight),
            #[cfg(feature = "cuda")]
            (Engine::Cpu, Started::Gpu(_)) => Err(super::PoolError::WorkerFailed {
                worker: "cpu".into(),
                message: "asked to finish a GPU proof".into(),
            }
            .into()),
        }
    }
}
