//! start_proof / finish_proof: a proof's GPU work runs on a worker thread
//! bound to the named device while the caller's thread goes on (synthesizing
//! the next circuit); finishing waits for it on that same device.

use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use blstrs::Scalar;

use super::arrivals::ScalarArrivals;
use super::input::ProofInput;
use super::key::GpuProvingKey;
use super::lanes::{run_lanes, Placement, WorkerResult};
use super::resident_key::{ensure_free_memory, proof_working_bytes, ResidentKey};
use crate::backend::cpu::Domain;
use crate::backend::cuda::HInputs;
use crate::device::{DeviceGuard, GpuError};
use crate::groth16::prover::{assemble, timed, StageTimes};
use crate::groth16::Proof;
use crate::host_pools::{run_on, split_pool};
use crate::synthesis::{Assignment, CircuitShape, WitnessValues};
use crate::Error;

/// A proof whose GPU work was started on one device. Finish it with
/// [`finish_proof`] and a guard of that device. Dropping it waits for the
/// work in flight and frees its device buffers; the device stays usable.
#[must_use = "a pending proof does nothing until finished"]
pub struct PendingProof {
    ordinal: usize,
    worker: Option<JoinHandle<WorkerResult>>,
    key: GpuProvingKey,
    r: Scalar,
    s: Scalar,
    upload: Duration,
}

impl PendingProof {
    /// The CUDA ordinal of the device doing the work.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
}

impl Drop for PendingProof {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            // The result (or a panic) is dropped with the proof; the worker's
            // buffers are freed as it returns.
            let _ = worker.join();
        }
    }
}

impl std::fmt::Debug for PendingProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingProof")
            .field("ordinal", &self.ordinal)
            .finish_non_exhaustive()
    }
}

fn check_device(expected: usize, guard: &DeviceGuard<'_>) -> Result<(), GpuError> {
    let got = guard.device().ordinal();
    if got == expected {
        Ok(())
    } else {
        Err(GpuError::WrongDevice { expected, got })
    }
}

/// What the host part of a proof left: the lanes (a handle, or their
/// result), and the upload's time or error. The caller settles the lanes
/// before it reports an upload error.
struct Started<T> {
    lanes: Result<T, Error>,
    /// The time the host parts took (the later of the upload and the
    /// split), or why a, b, c did not reach the device.
    upload: Result<Duration, Error>,
}

/// The host part of a proof on the guard's device, where `key` is
/// resident: the free-memory check, then `start_lanes` on a thread of its
/// own while this thread (which holds the guard) uploads a, b, c and
/// another splits the b, a, l scalars. Each reaches the lanes as soon as
/// it is ready (a, b, c through a channel, each split vector through the
/// arrivals), so the MSM lanes start on their scalars while a, b, c are
/// still crossing the bus, and the H lane once they have landed; a channel
/// or an arrival closed empty means that part failed.
fn upload_then_start<T: Send>(
    guard: &DeviceGuard<'_>,
    key: &ResidentKey,
    domain: &Domain,
    input: ProofInput<'_>,
    start_lanes: impl FnOnce(Receiver<HInputs>, Arc<ScalarArrivals>) -> Result<T, Error> + Send,
) -> Result<Started<T>, Error> {
    ensure_free_memory(
        guard.device(),
        "a proof's working memory",
        proof_working_bytes(&key.sizes),
    )?;
    let started = Instant::now();
    let (splitter, scalars) = ScalarArrivals::new(key.scalar_buffers.clone());
    let (send_inputs, inputs) = mpsc::sync_channel(1);
    Ok(std::thread::scope(|scope| {
        // On threads of its own: a caller synthesizing its next circuits
        // on rayon's pool would hold it back (see split_pool).
        let split = scope.spawn(move || {
            run_on(split_pool(), || splitter.split(&input.witness(), started));
            started.elapsed()
        });
        let lanes = scope.spawn(move || start_lanes(inputs, scalars));
        let upload = key.upload_inputs(guard, domain, input);
        let uploaded = started.elapsed();
        let upload = upload.map(|inputs| {
            // As above: a lane that stopped on an error takes nothing.
            let _ = send_inputs.send(inputs);
        });
        // Closed now, sent or not: an H lane waiting on a failed upload
        // must see it before the lanes are joined below.
        drop(send_inputs);
        let lanes = lanes.join().unwrap_or_else(|_| {
            Err(GpuError::Native("starting a proof's GPU lanes panicked".into()).into())
        });
        // A split that panicked shows in the lanes' result: no scalars came.
        let split_done = split.join().unwrap_or_default();
        log::debug!(
            "a, b, c uploaded {:.3} s and scalars split {:.3} s after the proof's start",
            uploaded.as_secs_f64(),
            split_done.as_secs_f64()
        );
        Started {
            lanes,
            upload: upload.map(|()| uploaded.max(split_done)),
        }
    }))
}

/// Starts proving `assignment` with `key` (resident on the guard's device)
/// and the given r and s: uploads a, b, c, prepares the MSM scalars, and
/// leaves the NTTs and the five MSMs (B in G2 too) running on the device.
/// A key resident on another device, a key that does not fit the circuit,
/// or a proof that cannot fit the device's free memory is an error, before
/// any work starts.
pub fn start_proof(
    guard: &DeviceGuard<'_>,
    key: &GpuProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<PendingProof, Error> {
    start(guard, key, ProofInput::Evaluated(assignment), r, s)
}

/// [`start_proof`] from a witness and the recorded shape it was computed
/// for ([`CircuitShape::witness`]), the same proof as `start_proof` of
/// `shape.assign(witness)`: A, B and C are evaluated here, a piece of rows
/// at a time, straight into the key's pinned upload buffer, each piece
/// crossing the bus while the next is evaluated. That saves copying them
/// there (384 MiB for a 4M-constraint PoRep partition); where the shape's
/// matrices fit on the device, the witness goes up and they are evaluated
/// there. The witness is a
/// [`WitnessAssignment`](crate::synthesis::WitnessAssignment) or its values in the
/// caller's buffers ([`WitnessValues`]): aux values in page-locked memory
/// cross the bus without staging. A witness that does not fit the shape,
/// or a row where a·b differs from c, is an error, and no proof is left
/// running; the witness is no longer read once this returns.
pub fn start_proof_shaped<'w>(
    guard: &DeviceGuard<'_>,
    key: &GpuProvingKey,
    shape: &CircuitShape,
    witness: impl Into<WitnessValues<'w>>,
    r: Scalar,
    s: Scalar,
) -> Result<PendingProof, Error> {
    let witness = witness.into();
    start(guard, key, ProofInput::Shaped { shape, witness }, r, s)
}

fn start(
    guard: &DeviceGuard<'_>,
    key: &GpuProvingKey,
    input: ProofInput<'_>,
    r: Scalar,
    s: Scalar,
) -> Result<PendingProof, Error> {
    let device = guard.device();
    check_device(key.ordinal(), guard)?;
    input.check(&key.inner.sizes)?;
    let domain = Domain::new(input.num_constraints())?;
    let worker_device = device.duplicate()?;
    let worker_key = key.clone();
    let worker_domain = domain.clone();
    let spawn_worker = move |inputs: Receiver<HInputs>, scalars: Arc<ScalarArrivals>| {
        std::thread::Builder::new()
            .name(format!("groth16-gpu-{}", worker_device.ordinal()))
            .spawn(move || {
                let placement = Placement {
                    devices: vec![(worker_device, &*worker_key.inner)],
                };
                run_lanes(placement, &worker_domain, inputs, &scalars)
            })
            .map_err(|e| {
                Error::from(GpuError::Native(format!(
                    "cannot start a proof's worker thread: {e}"
                )))
            })
    };
    let started = upload_then_start(guard, &key.inner, &domain, input, spawn_worker)?;
    let worker = started.lanes?;
    let upload = match started.upload {
        Ok(upload) => upload,
        Err(error) => {
            // The lanes saw the closed channel; wait for what they started.
            let _ = worker.join();
            return Err(error);
        }
    };
    Ok(PendingProof {
        ordinal: device.ordinal(),
        worker: Some(worker),
        key: key.clone(),
        r,
        s,
        upload,
    })
}

/// Waits for a pending proof's GPU work on the guard's device and assembles
/// the proof. A guard of another device is an error (the work is dropped,
/// never assembled into a wrong proof).
pub fn finish_proof(guard: &DeviceGuard<'_>, pending: PendingProof) -> Result<Proof, Error> {
    finish_proof_timed(guard, pending).map(|(proof, _)| proof)
}

/// [`finish_proof`], also returning the time of each stage: upload on the
/// caller's thread, the rest on the device's worker (wall time).
pub fn finish_proof_timed(
    guard: &DeviceGuard<'_>,
    mut pending: PendingProof,
) -> Result<(Proof, StageTimes), Error> {
    check_device(pending.ordinal, guard)?;
    let worker = pending
        .worker
        .take()
        .ok_or_else(|| GpuError::Native("a pending proof without its worker".into()))?;
    let (sums, mut times) = worker
        .join()
        .map_err(|_| GpuError::Native("a proof's GPU worker panicked".into()))??;
    times.upload = pending.upload;
    let vk = &pending.key.inner.vk;
    let proof = timed(&mut times.assembly, || {
        assemble(vk, &sums, pending.r, pending.s)
    });
    Ok((proof, times))
}

/// [`start_proof`] then [`finish_proof_timed`].
pub fn prove_on_device(
    guard: &DeviceGuard<'_>,
    key: &GpuProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, StageTimes), Error> {
    let pending = start_proof(guard, key, assignment, r, s)?;
    finish_proof_timed(guard, pending)
}

/// One proof split over several devices, for latency when there are fewer
/// proofs than GPUs: the H polynomial and h on the first device; the l, a,
/// b_g1 and b_g2 MSMs dealt out by `division::plan`, whole or as ranges
/// of their bases, so that every device has about as much work (the first
/// device's share smaller by its H work); the partial sums added.
/// `keys[i]` must be resident on `guards[i]`'s device. The same proof as
/// [`prove_on_device`] (only where the sums are computed differs).
pub fn prove_split(
    guards: &[&DeviceGuard<'_>],
    keys: &[&GpuProvingKey],
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, StageTimes), Error> {
    if guards.is_empty() || guards.len() != keys.len() {
        return Err(GpuError::Native(format!(
            "a split proof needs one key per device: {} devices, {} keys",
            guards.len(),
            keys.len()
        ))
        .into());
    }
    for (guard, key) in guards.iter().zip(keys) {
        check_device(key.ordinal(), guard)?;
        key.inner.sizes.check(assignment)?;
    }
    let placement = Placement {
        devices: guards
            .iter()
            .zip(keys)
            .map(|(guard, key)| Ok((guard.device().duplicate()?, &*key.inner)))
            .collect::<Result<_, GpuError>>()?,
    };
    let domain = Domain::new(assignment.num_constraints())?;
    let started = upload_then_start(
        guards[0],
        &keys[0].inner,
        &domain,
        ProofInput::Evaluated(assignment),
        |inputs, scalars| run_lanes(placement, &domain, inputs, &scalars),
    )?;
    // The lanes have finished here: an upload error is the cause of theirs.
    let upload = started.upload?;
    let (sums, lane_times) = started.lanes?;
    let mut times = StageTimes {
        upload,
        ..StageTimes::default()
    };
    times += lane_times;
    let proof = timed(&mut times.assembly, || {
        assemble(&keys[0].inner.vk, &sums, r, s)
    });
    Ok((proof, times))
}
