//! What a job asks a worker to prove: a key, the circuit's values (an
//! assignment, or a witness with its recorded shape), r and s.

use std::ptr::NonNull;
use std::sync::Arc;

use blstrs::Scalar;

use crate::params::ProvingKey;
use crate::synthesis::{Assignment, CircuitShape, WitnessAssignment};
use crate::Error;

/// A proving key a job reads: shared with the caller, or borrowed from a
/// caller that waits for every job of its call (the bellperson-shaped
/// functions take `&ProvingKey`).
pub(super) enum KeyRef {
    Shared(Arc<ProvingKey>),
    Borrowed(BorrowedKey),
}

impl KeyRef {
    pub fn get(&self) -> &ProvingKey {
        match self {
            KeyRef::Shared(key) => key,
            // SAFETY: see `BorrowedKey::new`: the key outlives every job
            // that holds this reference.
            KeyRef::Borrowed(key) => unsafe { key.0.as_ref() },
        }
    }

    /// Another reference to the same key (for the next job of a call).
    pub fn again(&self) -> KeyRef {
        match self {
            KeyRef::Shared(key) => KeyRef::Shared(key.clone()),
            KeyRef::Borrowed(key) => KeyRef::Borrowed(BorrowedKey(key.0)),
        }
    }
}

/// A key behind a plain pointer, for jobs of a call that does not return
/// before each of them has been answered.
pub(super) struct BorrowedKey(NonNull<ProvingKey>);

// SAFETY: `ProvingKey` is Sync (plain points); the pointer is only read,
// from worker threads, while the call that lent it waits.
unsafe impl Send for BorrowedKey {}
unsafe impl Sync for BorrowedKey {}

impl BorrowedKey {
    /// # Safety
    /// `key` must outlive every job given this reference: the caller waits
    /// for all of its jobs' replies (a job is answered only after its last
    /// read of the key) and does so even when it unwinds.
    pub unsafe fn new(key: &ProvingKey) -> Self {
        BorrowedKey(NonNull::from(key))
    }
}

/// The circuit's values a job proves.
pub(super) enum JobInput {
    /// Every variable, and A, B, C evaluated.
    Assignment(Assignment),
    /// The variables only; A, B, C come from the recorded shape (on a GPU
    /// evaluated straight into the upload buffers).
    Shaped {
        shape: Arc<CircuitShape>,
        witness: WitnessAssignment,
    },
}

impl JobInput {
    /// The number of constraints the input has (its domain's base).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub fn num_constraints(&self) -> usize {
        match self {
            JobInput::Assignment(assignment) => assignment.num_constraints(),
            JobInput::Shaped { shape, .. } => shape.num_constraints(),
        }
    }

    /// The input as an assignment (a shaped one evaluated now).
    pub fn to_assignment(&self) -> Result<std::borrow::Cow<'_, Assignment>, Error> {
        match self {
            JobInput::Assignment(assignment) => Ok(std::borrow::Cow::Borrowed(assignment)),
            JobInput::Shaped { shape, witness } => {
                Ok(std::borrow::Cow::Owned(shape.assign(witness.clone())?))
            }
        }
    }
}

/// What a worker proves.
pub(super) struct Work {
    pub key: KeyRef,
    /// The key's digest: resident copies are found by it.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub key_digest: u64,
    pub input: JobInput,
    pub r: Scalar,
    pub s: Scalar,
}

/// A finished proof and what making it uploaded.
pub(super) struct Proved {
    pub proof: crate::groth16::Proof,
    /// Bytes copied to the device: keys uploaded plus the proof's inputs.
    pub bytes_uploaded: u64,
    /// Proving keys uploaded for this proof (0 when resident already).
    pub key_uploads: u64,
}
