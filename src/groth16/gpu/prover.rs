//! start_proof / finish_proof: a proof's GPU work runs on a worker thread
//! bound to the named device while the caller's thread goes on (synthesizing
//! the next circuit); finishing waits for it on that same device.

use std::sync::mpsc::{self, Receiver};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use blstrs::Scalar;

use super::key::{ensure_free_memory, proof_working_bytes, GpuProvingKey, ResidentKey};
use super::split::{GeneralScalars, ProofScalars, ScalarBuffers, SplitScalars};
use crate::backend::cpu::Domain;
use crate::backend::cuda::{GpuCurve, HInputs, ResidentBases};
use crate::device::{Device, DeviceGuard, DeviceMutex, GpuError};
use crate::groth16::prover::{assemble, timed, MsmSums, StageTimes};
use crate::groth16::Proof;
use crate::synthesis::Assignment;
use crate::Error;

type WorkerResult = Result<(MsmSums, StageTimes), Error>;

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

/// The host part of a proof on the guard's device, where `key` is
/// resident: the free-memory check, then a, b, c uploaded on this thread
/// (which holds the guard) while another splits the l, a, b scalars.
/// `start_lanes` gets the uploaded inputs as soon as they are on the device,
/// so the H polynomial and the h MSM (which need no split scalars) start at
/// once; the split scalars follow through the receiver (none arrive if the
/// split panicked). Returns what `start_lanes` returned and the time the
/// host parts took (the later of the upload and the split).
fn upload_then_start<T>(
    guard: &DeviceGuard<'_>,
    key: &ResidentKey,
    domain: &Domain,
    assignment: &Assignment,
    start_lanes: impl FnOnce(HInputs, Receiver<ProofScalars>) -> Result<T, Error>,
) -> Result<(T, Duration), Error> {
    ensure_free_memory(
        guard.device(),
        "a proof's working memory",
        proof_working_bytes(&key.sizes),
    )?;
    let started = Instant::now();
    let (send, receive) = mpsc::sync_channel(1);
    std::thread::scope(|scope| {
        let split = scope.spawn(move || {
            let scalars = ProofScalars::of(assignment, &key.scalar_buffers);
            let done = started.elapsed();
            // The lanes may already have stopped on an error: nothing to do.
            let _ = send.send(scalars);
            done
        });
        let inputs = key.upload_inputs(guard, domain, assignment)?;
        let uploaded = started.elapsed();
        let lanes = start_lanes(inputs, receive)?;
        // A split that panicked shows in the lanes' result: no scalars came.
        let split_done = split.join().unwrap_or_default();
        Ok((lanes, uploaded.max(split_done)))
    })
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
    let device = guard.device();
    check_device(key.ordinal(), guard)?;
    key.inner.sizes.check(assignment)?;
    let domain = Domain::new(assignment.num_constraints())?;
    let worker_device = device.duplicate()?;
    let worker_key = key.clone();
    let worker_domain = domain.clone();
    let spawn_worker = move |inputs: HInputs, scalars: Receiver<ProofScalars>| {
        std::thread::Builder::new()
            .name(format!("groth16-gpu-{}", worker_device.ordinal()))
            .spawn(move || {
                let lanes = Lanes::on_one_device(worker_device, &worker_key.inner)?;
                run_lanes(
                    lanes,
                    &worker_domain,
                    inputs,
                    scalars,
                    &worker_key.inner.scalar_buffers,
                )
            })
            .map_err(|e| {
                Error::from(GpuError::Native(format!(
                    "cannot start a proof's worker thread: {e}"
                )))
            })
    };
    let (worker, upload) = upload_then_start(guard, &key.inner, &domain, assignment, spawn_worker)?;
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

/// Where a proof's three lanes run: (H polynomial, h), (l, a, b_g1) and
/// (b_g2), each a device handle and the key resident there. The lanes run
/// at once, each a thread with its own streams; the first needs no split
/// scalars, so it starts while the host is still splitting them.
struct Lanes<'k> {
    devices: [Device; 3],
    keys: [&'k ResidentKey; 3],
}

impl<'k> Lanes<'k> {
    /// All three lanes on one device: one MSM's serial phases (bucket and
    /// window reductions, host round trips) leave room the others fill.
    fn on_one_device(device: Device, key: &'k ResidentKey) -> Result<Self, GpuError> {
        Ok(Self {
            devices: [device.duplicate()?, device.duplicate()?, device],
            keys: [key; 3],
        })
    }
}

/// Runs the lanes; the stage times they report overlap. The H lane starts
/// at once; the others once the split scalars arrive, which go back to
/// `buffers` at the end.
fn run_lanes(
    lanes: Lanes<'_>,
    domain: &Domain,
    inputs: HInputs,
    scalars: Receiver<ProofScalars>,
    buffers: &ScalarBuffers,
) -> WorkerResult {
    let Lanes {
        devices: [h_device, ab_device, b_g2_device],
        keys: [h_key, ab_key, b_g2_key],
    } = lanes;
    let received = OnceLock::new();
    let lanes = std::thread::scope(|scope| {
        let h = scope.spawn(|| {
            on_lane(h_device, |guard| -> Result<_, Error> {
                let mut t = StageTimes::default();
                let (h_coeffs, _) = timed(&mut t.h_polynomial, || inputs.compute(guard, domain))?;
                let h = timed(&mut t.msm_h, || {
                    h_key
                        .h
                        .msm_device_scalars(guard, &h_coeffs, domain.size() - 1)
                })?
                .0;
                Ok((h, t))
            })
        });
        let Ok(scalars) = scalars.recv() else {
            let _ = join_lane(h);
            return Err(Error::from(GpuError::Native(
                "splitting a proof's scalars panicked".into(),
            )));
        };
        let scalars: &ProofScalars = received.get_or_init(|| scalars);
        let ab = scope.spawn(|| {
            on_lane(ab_device, |guard| -> Result<_, Error> {
                let mut t = StageTimes::default();
                let l = timed(&mut t.msm_l, || split_msm(guard, &ab_key.l, &scalars.l))?;
                let a = timed(&mut t.msm_a, || split_msm(guard, &ab_key.a, &scalars.a))?;
                let b_g1 = timed(&mut t.msm_b_g1, || {
                    split_msm(guard, &ab_key.b_g1, &scalars.b)
                })?;
                Ok((l, a, b_g1, t))
            })
        });
        let b_g2 = scope.spawn(|| {
            on_lane(b_g2_device, |guard| -> Result<_, Error> {
                let mut t = StageTimes::default();
                let b_g2 = timed(&mut t.msm_b_g2, || {
                    split_msm(guard, &b_g2_key.b_g2, &scalars.b)
                })?;
                Ok((b_g2, t))
            })
        });
        Ok((join_lane(h), join_lane(ab), join_lane(b_g2)))
    });
    if let Some(scalars) = received.into_inner() {
        scalars.recycle(buffers);
    }
    let (h_lane, ab_lane, b_g2_lane) = lanes?;
    let (h, mut t) = h_lane?;
    let (l, a, b_g1, t_ab) = ab_lane?;
    let (b_g2, t_b_g2) = b_g2_lane?;
    t += t_ab;
    t += t_b_g2;
    Ok((
        MsmSums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        },
        t,
    ))
}

/// One proof split over several devices, for latency when there are fewer
/// proofs than GPUs: the H polynomial and h on the first device; with two
/// devices l, a and b_g1 there too and b_g2 (about as much work as the
/// rest) on the second; with three or more each lane on its own device.
/// `keys[i]` must be resident on `guards[i]`'s device. The same proof as
/// [`prove_on_device`] (the sums are the same, only where they run differs).
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
    let lane_owner: [usize; 3] = match guards.len() {
        1 => [0, 0, 0],
        2 => [0, 0, 1],
        _ => [0, 1, 2],
    };
    let devices = [
        guards[lane_owner[0]].device().duplicate()?,
        guards[lane_owner[1]].device().duplicate()?,
        guards[lane_owner[2]].device().duplicate()?,
    ];
    let lanes = Lanes {
        devices,
        keys: lane_owner.map(|i| &*keys[i].inner),
    };
    let domain = Domain::new(assignment.num_constraints())?;
    let buffers = &keys[0].inner.scalar_buffers;
    let ((sums, lane_times), upload) = upload_then_start(
        guards[0],
        &keys[0].inner,
        &domain,
        assignment,
        |inputs, scalars| run_lanes(lanes, &domain, inputs, scalars, buffers),
    )?;
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

/// Runs `f` with a guard of its own on a second handle to the caller's
/// device: the backend launches through guards, and the caller holds the
/// real one.
fn on_lane<T>(
    device: Device,
    f: impl FnOnce(&DeviceGuard<'_>) -> Result<T, Error>,
) -> Result<T, Error> {
    let own = DeviceMutex::new(device);
    let guard = own.lock();
    f(&guard)
}

fn join_lane<T>(lane: std::thread::ScopedJoinHandle<'_, Result<T, Error>>) -> Result<T, Error> {
    lane.join()
        .map_err(|_| Error::from(GpuError::Native("a proof's GPU lane panicked".into())))?
}

/// Σ scalars·bases as a bucket MSM over the general scalars plus a batch
/// addition of the bases whose scalar is 1.
fn split_msm<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    bases: &ResidentBases<G>,
    split: &SplitScalars,
) -> Result<G::Curve, GpuError>
where
    G::Curve: Send + Sync,
{
    let mut sum = match &split.general {
        GeneralScalars::Dense(values) => bases.msm(guard, values)?,
        GeneralScalars::Sparse { values, indices } => bases.msm_indexed(guard, values, indices)?,
    };
    if split.ones_count > 0 {
        sum += bases.batch_add(guard, &split.ones, split.len)?;
    }
    Ok(sum)
}
