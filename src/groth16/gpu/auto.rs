//! The GPUs behind the bellperson-shaped functions: a free device of this
//! process's shared set for one proof, every free device for a batch, with
//! the key resident on each; none (the CPU path) when there is no device
//! or the key fits none.
//!
//! The key stays resident after the call, one per device, so that the next
//! call with the same key (Filecoin proves sector after sector with one)
//! skips its upload (~0.35 s for a 4M-constraint PoRep key, seconds for a
//! 32 GiB sector's). A call with another key replaces it; a key upload
//! anywhere in the process that finds the device too full drops it first;
//! [`keep_keys_resident`] turns this off and [`release_resident_keys`]
//! frees them now.

use std::sync::atomic::{AtomicBool, Ordering};

use blstrs::Scalar;
use parking_lot::Mutex;

use super::streamed::prove_streamed;
use super::work_queue::{share_out, ShareEnd, WorkQueue};
use super::{finish_proof, prove_on_device, start_proof_shaped, GpuProvingKey, PendingProof};
use crate::device::{DeviceGuard, DeviceMutex, GpuError};
use crate::groth16::shape_cache::key_digest;
use crate::groth16::Priority;
use crate::groth16::Proof;
use crate::params::ProvingKey;
use crate::synthesis::{Assignment, CircuitShape, WitnessAssignment};
use crate::Error;

/// Proofs the bellperson-shaped functions made on each device, by ordinal.
static PROVED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// How many proofs the bellperson-shaped functions have made on each
/// device since the process started, by CUDA ordinal: where a batch's work
/// went (every device of the host should have some).
pub fn proofs_by_device() -> Vec<u64> {
    PROVED.lock().clone()
}

fn count_proof(ordinal: usize) {
    let mut proved = PROVED.lock();
    if proved.len() <= ordinal {
        proved.resize(ordinal + 1, 0);
    }
    proved[ordinal] += 1;
}

/// Keys left resident by earlier calls: CUDA ordinal, key digest, key.
static KEPT: Mutex<Vec<(usize, u64, GpuProvingKey)>> = Mutex::new(Vec::new());
static KEEP: AtomicBool = AtomicBool::new(true);

/// Whether the bellperson-shaped functions leave their key resident on the
/// device after a call (the default) for the next call with that key.
/// `false` also frees those kept now.
pub fn keep_keys_resident(keep: bool) {
    KEEP.store(keep, Ordering::Relaxed);
    if !keep {
        release_resident_keys();
    }
}

/// Frees the keys the bellperson-shaped functions left resident (their
/// device memory and pinned staging buffers), once no call is using them.
pub fn release_resident_keys() {
    KEPT.lock().clear();
}

/// How many keys the bellperson-shaped functions keep resident now (at
/// most one per device).
pub fn resident_keys() -> usize {
    KEPT.lock().len()
}

/// Drops the key kept on device `ordinal`; whether there was one.
pub(super) fn release_kept_key(ordinal: usize) -> bool {
    let mut kept = KEPT.lock();
    let before = kept.len();
    kept.retain(|(on, _, _)| *on != ordinal);
    kept.len() != before
}

/// The key kept on device `ordinal` if it is the one with `digest`.
fn kept_key(ordinal: usize, digest: u64) -> Option<GpuProvingKey> {
    KEPT.lock()
        .iter()
        .find(|(on, kept, _)| *on == ordinal && *kept == digest)
        .map(|(_, _, key)| key.clone())
}

/// One device held, with the key resident on it, or streamed to it for
/// each proof where it cannot fit.
pub(crate) struct GpuSession<'k> {
    guard: DeviceGuard<'static>,
    key: SessionKey<'k>,
    /// Urgent sessions keep their device until they are done.
    priority: Priority,
}

/// How a session's device gets the key's points.
enum SessionKey<'k> {
    /// Resident there (kept from an earlier call, or uploaded for this one).
    Resident(GpuProvingKey),
    /// Larger than the device's memory: each proof sends the points across
    /// the bus a chunk at a time ([`prove_streamed`]).
    Streamed(&'k ProvingKey),
}

impl<'k> GpuSession<'k> {
    /// A device and the key on it (streamed where it cannot fit); `None`
    /// when there is no device, so the caller proves on the CPU. An urgent
    /// session goes ahead of the others waiting for a device, and a batch
    /// holding it hands it over between two proofs
    /// ([`DeviceMutex::lock_urgent`]).
    pub fn open(key: &'k ProvingKey, priority: Priority) -> Result<Option<Self>, Error> {
        let Some(devices) = shared_devices() else {
            return Ok(None);
        };
        Self::on_device(lock_a_device(devices, priority), key, priority)
    }

    /// The key on the guard's device: kept there by an earlier call, else
    /// uploaded, else (where it cannot fit) streamed for each proof.
    fn on_device(
        guard: DeviceGuard<'static>,
        key: &'k ProvingKey,
        priority: Priority,
    ) -> Result<Option<Self>, Error> {
        let ordinal = guard.device().ordinal();
        let digest = key_digest(key);
        let key = if let Some(kept) = kept_key(ordinal, digest) {
            SessionKey::Resident(kept)
        } else {
            // Another key kept there would only take the room this one needs.
            release_kept_key(ordinal);
            match GpuProvingKey::upload(&guard, key) {
                Ok(resident) => {
                    if KEEP.load(Ordering::Relaxed) {
                        KEPT.lock().push((ordinal, digest, resident.clone()));
                    }
                    SessionKey::Resident(resident)
                }
                Err(Error::Gpu(error)) if error.is_out_of_memory() => {
                    log::warn!("GPU {ordinal}: {error}; streaming the key's points for each proof");
                    SessionKey::Streamed(key)
                }
                Err(error) => return Err(error),
            }
        };
        Ok(Some(Self {
            guard,
            key,
            priority,
        }))
    }

    /// Proves on the session's device, after any urgent session waiting
    /// for it has had its turn.
    pub fn prove(&mut self, assignment: &Assignment, r: Scalar, s: Scalar) -> Result<Proof, Error> {
        self.yield_to_urgent(0);
        let proof = match &self.key {
            SessionKey::Resident(key) => prove_on_device(&self.guard, key, assignment, r, s)?.0,
            SessionKey::Streamed(key) => prove_streamed(&self.guard, key, assignment, r, s)?,
        };
        count_proof(self.guard.device().ordinal());
        Ok(proof)
    }

    /// Proves witnesses of one shape with their r and s, taking them from
    /// `queue` one at a time (the other devices of the batch take theirs
    /// from it too), two in flight: each proof's A, B, C are evaluated into
    /// the pinned upload buffer ([`start_proof_shaped`]) while the previous
    /// proof runs on the device. Where two proofs do not fit the device's
    /// memory at once, the earlier one is finished first. Where an urgent
    /// session waits for the device, the proof in flight is finished and
    /// the device handed over before the next one starts (a proof is
    /// seconds at most; a batch is minutes).
    ///
    /// A device error ends this device's share: the witnesses it had taken
    /// and not proved go back to the others (or the CPU), and the key kept
    /// there is dropped unless the device was only full. Any other error (a
    /// witness that breaks a row, a key that does not fit) fails the batch.
    pub fn prove_queued(
        &mut self,
        batch: &WitnessBatch<'_>,
        queue: &WorkQueue,
    ) -> Result<ShareEnd<Proof>, Error> {
        let mut share = Share::default();
        let result = self.prove_share(batch, queue, &mut share);
        let ordinal = self.guard.device().ordinal();
        for _ in &share.made {
            count_proof(ordinal);
        }
        match result {
            Ok(()) => Ok(ShareEnd::Done(share.made)),
            Err(Error::Gpu(error)) => {
                // Settle the proof in flight (its worker is waited for)
                // before its witness goes to another device.
                drop(share.in_flight.take());
                if !error.is_out_of_memory() {
                    release_kept_key(ordinal);
                }
                Ok(ShareEnd::DeviceFailed {
                    made: share.made,
                    in_hand: share.in_hand,
                    error: Error::Gpu(error),
                })
            }
            Err(error) => Err(error),
        }
    }

    /// The loop of [`prove_queued`](Self::prove_queued); `share` says, at
    /// any error, what was made and what was taken and not made.
    fn prove_share(
        &mut self,
        batch: &WitnessBatch<'_>,
        queue: &WorkQueue,
        share: &mut Share,
    ) -> Result<(), Error> {
        while let Some(index) = queue.take() {
            share.in_hand.push(index);
            if self.should_yield() {
                share.finish_in_flight(&self.guard)?;
                self.yield_to_urgent(share.made.len());
            }
            injected_fault(self.guard.device().ordinal(), share.made.len())?;
            let (witness, r, s) = (&batch.witnesses[index], batch.r_s[index], batch.s_s[index]);
            let key = match &self.key {
                SessionKey::Resident(key) => key,
                SessionKey::Streamed(key) => {
                    // One proof at a time: the chunks take the memory.
                    let assignment = batch.shape.assign(witness.clone())?;
                    let proof = prove_streamed(&self.guard, key, &assignment, r, s)?;
                    share.record(index, proof);
                    continue;
                }
            };
            let start = || start_proof_shaped(&self.guard, key, batch.shape, witness, r, s);
            let pending = match start() {
                Err(Error::Gpu(error)) if error.is_out_of_memory() && share.in_flight.is_some() => {
                    share.finish_in_flight(&self.guard)?;
                    start()?
                }
                started => started?,
            };
            share.finish_in_flight(&self.guard)?;
            share.in_flight = Some((index, pending));
        }
        share.finish_in_flight(&self.guard)
    }

    /// Whether an urgent session waits for this normal session's device.
    fn should_yield(&self) -> bool {
        self.priority == Priority::Normal && self.guard.urgent_waiting()
    }

    /// Hands the device to the urgent sessions waiting for it, if this
    /// session is a normal one, and takes it back once they are done;
    /// nothing of this session's may be in flight.
    fn yield_to_urgent(&mut self, proved: usize) {
        if self.should_yield() {
            log::debug!(
                "GPU {}: hands the device to urgent work after {proved} proof(s)",
                self.guard.device().ordinal()
            );
            self.guard.yield_to_urgent();
        }
    }
}

/// A batch's witnesses of one shape, with their r and s.
pub(crate) struct WitnessBatch<'a> {
    pub shape: &'a CircuitShape,
    pub witnesses: &'a [WitnessAssignment],
    pub r_s: &'a [Scalar],
    pub s_s: &'a [Scalar],
}

/// A device's share of a batch while it runs: the proofs made, the proof
/// in flight, and the witnesses taken and not yet made (the one in flight
/// among them).
#[derive(Default)]
struct Share {
    made: Vec<(usize, Proof)>,
    in_flight: Option<(usize, PendingProof)>,
    in_hand: Vec<usize>,
}

impl Share {
    /// Finishes the proof in flight, if any.
    fn finish_in_flight(&mut self, guard: &DeviceGuard<'_>) -> Result<(), Error> {
        if let Some((index, pending)) = self.in_flight.take() {
            self.record(index, finish_proof(guard, pending)?);
        }
        Ok(())
    }

    /// Witness `index` proved: made, no longer in hand.
    fn record(&mut self, index: usize, proof: Proof) {
        self.in_hand.retain(|&taken| taken != index);
        self.made.push((index, proof));
    }
}

/// A device failure injected by a test: (ordinal, proofs made first).
static INJECTED_FAULT: Mutex<Option<(usize, usize)>> = Mutex::new(None);

/// Makes the next batch share on device `ordinal` fail as a device would
/// once it has made `after` proofs (`None`: no failure), so tests can see
/// a batch survive a device's failure. Taken once.
#[doc(hidden)]
pub fn inject_device_fault_for_tests(fault: Option<(usize, usize)>) {
    *INJECTED_FAULT.lock() = fault;
}

fn injected_fault(ordinal: usize, made: usize) -> Result<(), Error> {
    let mut fault = INJECTED_FAULT.lock();
    if *fault == Some((ordinal, made)) {
        *fault = None;
        return Err(GpuError::Native("injected device failure (test hook)".into()).into());
    }
    Ok(())
}

/// Proves a batch's witnesses on this process's GPUs: the device the
/// caller gets first (as [`GpuSession::open`] picks it) and, for a batch of
/// more than one, every other device nobody holds now, each with the key
/// resident (kept from an earlier call, else uploaded meanwhile, where the
/// batch has two proofs or more for every device) and taking the next
/// witness nobody has taken. So a 10-partition PoRep batch keeps every GPU
/// of the host busy; a device that joins late (its upload) proves fewer,
/// and its key stays for the next call. A device that fails leaves its
/// witnesses to the others. Proofs come back in order, None for those no
/// device made (no device, no room for the key anywhere, or the last
/// device failed): the caller proves them on the CPU. An error that is not
/// a device's (a witness that breaks a row) fails the batch.
pub(crate) fn prove_batch_on_gpus(
    key: &ProvingKey,
    batch: &WitnessBatch<'_>,
    priority: Priority,
) -> Result<Vec<Option<Proof>>, Error> {
    let witnesses = batch.witnesses;
    let Some(devices) = shared_devices() else {
        return Ok(vec![None; witnesses.len()]);
    };
    let first = lock_a_device(devices, priority);
    let first_ordinal = first.device().ordinal();
    let free: Vec<&DeviceMutex> = devices
        .iter()
        .filter(|device| device.properties().ordinal != first_ordinal && !device.is_locked())
        .collect();
    // A device without the key kept joins only where the batch gives every
    // device two proofs or more: its upload (seconds for a large key with
    // its shifted copies) holds up the batch's end.
    let worth_uploading = witnesses.len() >= 2 * (free.len() + 1);
    let digest = key_digest(key);
    let helpers: Vec<_> = free
        .into_iter()
        .filter(|device| worth_uploading || kept_key(device.properties().ordinal, digest).is_some())
        .take(witnesses.len().saturating_sub(1))
        .map(|device| {
            move || match device.try_lock() {
                Some(guard) => GpuSession::on_device(guard, key, priority),
                // Taken by another caller meanwhile: the others do its share.
                None => Ok(None),
            }
        })
        .collect();
    share_out(
        witnesses.len(),
        || GpuSession::on_device(first, key, priority),
        helpers,
        |session, queue| session.prove_queued(batch, queue),
    )
}

/// This process's shared devices; None (logged if they cannot be opened)
/// when there are none.
fn shared_devices() -> Option<&'static [DeviceMutex]> {
    match DeviceMutex::all() {
        Ok(devices) if !devices.is_empty() => Some(devices),
        Ok(_) => None,
        Err(error) => {
            log::warn!("no usable CUDA device ({error}); proving on the CPU");
            None
        }
    }
}

/// The first device nobody holds, else waits for one (ahead of normal
/// callers when urgent), taking turns so that concurrent callers spread
/// over the devices.
fn lock_a_device(devices: &'static [DeviceMutex], priority: Priority) -> DeviceGuard<'static> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    if let Some(guard) = devices.iter().find_map(DeviceMutex::try_lock) {
        return guard;
    }
    let turn = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    lock_at(&devices[turn % devices.len()], priority)
}

/// Waits for `device`, an urgent caller ahead of the normal ones (a batch
/// holding it hands it over between two proofs).
pub(crate) fn lock_at(device: &DeviceMutex, priority: Priority) -> DeviceGuard<'_> {
    match priority {
        Priority::Normal => device.lock(),
        Priority::Urgent => device.lock_urgent(),
    }
}
