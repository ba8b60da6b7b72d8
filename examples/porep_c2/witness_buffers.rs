//! Page-locked buffers that porep_c2's witnesses are joined into, reused
//! from one partition to the next: a proof's start then sends the aux
//! values (3.5 GB at production size) on the copy engine. Staged through
//! the key's pinned slots beside the next partition's synthesis, that copy
//! took about 1.1 s on an H100 host, the start's longest step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use groth16_gpu::backend::cuda::PinnedStaging;
use groth16_gpu::synthesis::{JoinedInto, WitnessAssignment, WitnessValues};
use parking_lot::Mutex;

use crate::pipeline::Synthesis;

/// A partition's witness: in vectors of its own, or joined into a buffer
/// of the pool.
pub enum Witness {
    Owned(WitnessAssignment),
    Pinned(JoinedInto, PinnedStaging),
}

impl Witness {
    pub fn values(&self) -> WitnessValues<'_> {
        match self {
            Witness::Owned(witness) => witness.into(),
            Witness::Pinned(joined, buffer) => joined.values(buffer.as_slice()),
        }
    }
}

/// Page-locked buffers for a partition's aux values, taken by the
/// synthesis threads and given back once a proof has started.
pub struct WitnessBuffers {
    give_back: mpsc::Sender<PinnedStaging>,
    free: Mutex<mpsc::Receiver<PinnedStaging>>,
    count: usize,
    /// Set when the prover has stopped: a thread waiting for a buffer
    /// gives up instead of waiting for one that will not come back.
    closed: AtomicBool,
}

impl WitnessBuffers {
    /// Up to `count` buffers of `aux` scalars: fewer, with a warning, where
    /// the system refuses to lock more (none: witnesses keep their own
    /// vectors).
    pub fn new(count: usize, aux: usize) -> Self {
        let (give_back, free) = mpsc::channel();
        let mut made = 0;
        for _ in 0..count {
            match PinnedStaging::new(aux) {
                Ok(buffer) => {
                    let _ = give_back.send(buffer);
                    made += 1;
                }
                Err(error) => {
                    log::warn!("{made} page-locked witness buffers, not {count}: {error}");
                    break;
                }
            }
        }
        Self {
            give_back,
            free: Mutex::new(free),
            count: made,
            closed: AtomicBool::new(false),
        }
    }

    /// Buffers for `pipelines`: two for each partition synthesized at a
    /// time (one being joined, one waiting) and one being uploaded, for the
    /// widest pipeline that synthesizes in parts, at most five.
    pub fn for_pipelines(pipelines: &[Synthesis], aux: usize) -> Self {
        let widest = pipelines
            .iter()
            .filter_map(|synthesis| match synthesis {
                Synthesis::InParts(at_once)
                | Synthesis::ByChallenge(at_once)
                | Synthesis::InOrder { at_once, .. } => Some(*at_once),
                Synthesis::OneThreadEach(_) => None,
            })
            .max();
        Self::new(widest.map_or(0, |at_once| (2 * at_once + 1).min(5)), aux)
    }

    /// `witness` in a buffer of the pool, copied there if it has vectors of
    /// its own (waiting for a free buffer; as it is where the pool is
    /// closed).
    pub fn hold(&self, witness: Witness) -> Witness {
        let Witness::Owned(witness) = witness else {
            return witness;
        };
        let Some(mut buffer) = self.take() else {
            return Witness::Owned(witness);
        };
        buffer.as_mut_slice()[..witness.aux.len()].copy_from_slice(&witness.aux);
        let joined = JoinedInto {
            input: witness.input,
            aux_len: witness.aux.len(),
            constraints: witness.constraints,
        };
        Witness::Pinned(joined, buffer)
    }

    /// How many buffers there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// A free buffer, once one is given back; None once the pool is closed.
    pub fn take(&self) -> Option<PinnedStaging> {
        let free = self.free.lock();
        loop {
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            match free.recv_timeout(Duration::from_millis(50)) {
                Ok(buffer) => return Some(buffer),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// The witness's buffer back to the pool, where it has one.
    pub fn give_back(&self, witness: Witness) {
        if let Witness::Pinned(_, buffer) = witness {
            let _ = self.give_back.send(buffer);
        }
    }

    /// Opens the pool for a pipeline; the returned guard closes it when
    /// dropped (the prover done or stopped on an error).
    pub fn open(&self) -> OpenPool<'_> {
        self.closed.store(false, Ordering::Release);
        OpenPool(self)
    }
}

/// Closes its pool when dropped.
pub struct OpenPool<'a>(&'a WitnessBuffers);

impl Drop for OpenPool<'_> {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
    }
}
