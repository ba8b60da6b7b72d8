//! Recorded circuit shapes kept across calls of the bellperson-shaped
//! provers ([`create_proof`](super::create_proof) and
//! [`create_proof_batch`](super::create_proof_batch)), keyed by the
//! circuit's type and the proving key. Filecoin proves one circuit with one
//! key again and again (a PoRep's partitions sector after sector, a PoSt
//! every deadline). Recording the first circuit of every batch was the
//! batch's critical path (about 3 s of a 4.4 s batch of nine 4M-constraint
//! PoRep partitions on a 16-core host); with a kept shape only the
//! witnesses are left (about 0.7 s each, side by side).
//!
//! A kept shape costs host memory (its matrices: ~8 bytes per entry, some
//! gigabytes for a 32 GiB sector's partition), so at most
//! [`DEFAULT_SHAPE_CACHE_CAPACITY`] are kept, the least recently used
//! dropped first; [`set_shape_cache_capacity`] changes that (0 keeps none).
//!
//! A circuit whose constraints differ from a kept shape of its type and
//! key cannot pass: its witness is checked against the shape's counts and
//! every row's a·b = c, so it is an error (and the shape is dropped), never
//! a wrong proof. Such a circuit could not have made a valid proof with
//! that key anyway.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::params::ProvingKey;
use crate::synthesis::CircuitShape;

/// Shapes kept unless [`set_shape_cache_capacity`] says otherwise: enough
/// for a process that proves two kinds of circuit (say PoRep and a PoSt).
pub const DEFAULT_SHAPE_CACHE_CAPACITY: usize = 2;

/// Which shape: the circuit's type, and the key's digest ([`key_digest`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ShapeId {
    circuit: &'static str,
    key: u64,
}

impl ShapeId {
    pub fn of<C>(key: &ProvingKey) -> Self {
        Self {
            circuit: std::any::type_name::<C>(),
            key: key_digest(key),
        }
    }
}

/// A digest of a proving key: its verifying key, the lengths of its
/// queries and their first and last points. Keys generated apart differ in
/// all of these; the digest names a key across calls that pass it again.
pub(crate) fn key_digest(key: &ProvingKey) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut bytes = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = key.vk.write(&mut bytes);
    for query in [&key.h, &key.l, &key.a, &key.b_g1] {
        query.len().hash(&mut hasher);
        for point in query.first().into_iter().chain(query.last()) {
            bytes.extend_from_slice(&point.to_uncompressed());
        }
    }
    key.b_g2.len().hash(&mut hasher);
    for point in key.b_g2.first().into_iter().chain(key.b_g2.last()) {
        bytes.extend_from_slice(&point.to_uncompressed());
    }
    bytes.hash(&mut hasher);
    hasher.finish()
}

struct ShapeCache {
    /// Least recently used first.
    entries: Vec<(ShapeId, Arc<CircuitShape>)>,
    capacity: usize,
}

impl ShapeCache {
    fn trim(&mut self) {
        let excess = self.entries.len().saturating_sub(self.capacity);
        self.entries.drain(..excess);
    }
}

static CACHE: Mutex<ShapeCache> = Mutex::new(ShapeCache {
    entries: Vec::new(),
    capacity: DEFAULT_SHAPE_CACHE_CAPACITY,
});

/// Keeps at most `capacity` recorded shapes from now on (0: none), dropping
/// the least recently used beyond it.
pub fn set_shape_cache_capacity(capacity: usize) {
    let mut cache = CACHE.lock();
    cache.capacity = capacity;
    cache.trim();
}

/// Drops every kept shape.
pub fn clear_shape_cache() {
    CACHE.lock().entries.clear();
}

/// The kept shape for `id`, now the most recently used.
pub(crate) fn cached(id: &ShapeId) -> Option<Arc<CircuitShape>> {
    let mut cache = CACHE.lock();
    let at = cache.entries.iter().position(|(kept, _)| kept == id)?;
    let entry = cache.entries.remove(at);
    let shape = entry.1.clone();
    cache.entries.push(entry);
    Some(shape)
}

/// Keeps `shape` for `id` if there is room for any.
pub(crate) fn remember(id: ShapeId, shape: Arc<CircuitShape>) {
    let mut cache = CACHE.lock();
    if cache.capacity == 0 {
        return;
    }
    cache.entries.retain(|(kept, _)| *kept != id);
    cache.entries.push((id, shape));
    cache.trim();
}

/// Drops the shape kept for `id`: a circuit of its type and key did not fit it.
pub(crate) fn forget(id: &ShapeId) {
    CACHE.lock().entries.retain(|(kept, _)| kept != id);
}

/// Shapes kept now.
pub fn shape_cache_len() -> usize {
    CACHE.lock().entries.len()
}
