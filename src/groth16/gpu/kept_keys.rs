//! Proving keys kept resident on each device between jobs, for this whole
//! process: the one place that decides which keys stay on a device.
//!
//! Filecoin proves sector after sector with one key, so the next job with
//! the same key skips its upload (~0.35 s for a 4M-constraint PoRep key,
//! seconds for a 32 GiB sector's). Keys are told apart by their digest
//! (the verifying key, the query lengths and their end points), so callers
//! that hold the same key in different places share its resident copy. At
//! most [`KEYS_PER_DEVICE`] stay on a device, the one used longest ago
//! leaving first; a device too full for a new key drops the others first.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::key::GpuProvingKey;
use crate::device::DeviceGuard;
use crate::params::ProvingKey;
use crate::Error;

/// Keys that may stay resident on one device at once.
pub const KEYS_PER_DEVICE: usize = 2;

/// One kept key.
struct Kept {
    ordinal: usize,
    digest: u64,
    key: GpuProvingKey,
}

/// Every kept key, the one used longest ago first.
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
static KEEP: AtomicBool = AtomicBool::new(true);

/// Whether keys stay resident after their job (the default). `false` also
/// frees those kept now.
pub fn keep_keys_resident(keep: bool) {
    KEEP.store(keep, Ordering::Relaxed);
    if !keep {
        release_resident_keys();
    }
}

/// Frees every kept key (its device memory and pinned staging buffers)
/// once no proof under way uses it.
pub fn release_resident_keys() {
    KEPT.lock().clear();
}

/// How many keys are kept resident now, over all devices.
pub fn resident_keys() -> usize {
    KEPT.lock().len()
}

/// Drops the keys kept on device `ordinal`; whether there were any.
pub(crate) fn release_on(ordinal: usize) -> bool {
    let mut kept = KEPT.lock();
    let before = kept.len();
    kept.retain(|k| k.ordinal != ordinal);
    kept.len() != before
}

/// Drops the keys kept on device `ordinal` other than the one with
/// `digest`; whether there were any.
pub(crate) fn keep_only(ordinal: usize, digest: u64) -> bool {
    let mut kept = KEPT.lock();
    let before = kept.len();
    kept.retain(|k| k.ordinal != ordinal || k.digest == digest);
    kept.len() != before
}

/// `key` (whose digest is `digest`) on the guard's device, and whether it
/// was uploaded now: the kept copy where there is one, else uploaded
/// (dropping the device's other kept keys first if it is too full) and
/// kept unless keeping is off.
pub(crate) fn resident_key(
    guard: &DeviceGuard<'_>,
    key: &ProvingKey,
    digest: u64,
) -> Result<(GpuProvingKey, bool), Error> {
    let ordinal = guard.device().ordinal();
    if let Some(kept) = take_kept(ordinal, digest) {
        let resident = kept.key.clone();
        KEPT.lock().push(kept);
        return Ok((resident, false));
    }
    make_room(ordinal);
    let resident = match GpuProvingKey::upload(guard, key) {
        Err(Error::Gpu(error)) if error.is_out_of_memory() && release_on(ordinal) => {
            log::info!("GPU {ordinal}: {error}; dropped the other kept keys");
            GpuProvingKey::upload(guard, key)?
        }
        other => other?,
    };
    if KEEP.load(Ordering::Relaxed) {
        KEPT.lock().push(Kept {
            ordinal,
            digest,
            key: resident.clone(),
        });
    }
    Ok((resident, true))
}

/// Removes and returns the kept key with `digest` on `ordinal`.
fn take_kept(ordinal: usize, digest: u64) -> Option<Kept> {
    let mut kept = KEPT.lock();
    let position = kept
        .iter()
        .position(|k| k.ordinal == ordinal && k.digest == digest)?;
    Some(kept.remove(position))
}

/// Drops the device's least recently used keys until a new one may join.
fn make_room(ordinal: usize) {
    let mut kept = KEPT.lock();
    while kept.iter().filter(|k| k.ordinal == ordinal).count() >= KEYS_PER_DEVICE {
        let oldest = kept
            .iter()
            .position(|k| k.ordinal == ordinal)
            .expect("counted above");
        kept.remove(oldest);
    }
}
