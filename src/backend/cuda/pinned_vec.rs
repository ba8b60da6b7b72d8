//! A vector of scalars whose allocation stays page-locked while it is kept,
//! for host buffers that are filled again for every proof and read by the
//! MSMs: copies from it run at the bus's speed on the copy engine, where a
//! copy from ordinary memory is staged through the driver's bounce buffers
//! by the calling thread (~9 GB/s, a core busy all the while).

use std::ops::Deref;

use blstrs::Scalar;

use crate::bridge::ffi;
use crate::device::DeviceGuard;

/// A `Vec<Scalar>` of fixed capacity, its allocation registered with CUDA
/// (page-locked in place) when it was made. Filling goes through
/// [`PinnedVec::fill`], which keeps the allocation where it was locked.
pub struct PinnedVec {
    // Declared before `values`: dropped first, so the pages are unlocked
    // before the allocation is freed.
    registration: Option<cxx::UniquePtr<ffi::HostRegistration>>,
    values: Vec<Scalar>,
}

// SAFETY: the registration handle is only dropped (cudaHostUnregister, on
// any thread, after naming its device); it is never read or changed.
unsafe impl Send for PinnedVec {}
// SAFETY: as above; shared references reach only the scalars.
unsafe impl Sync for PinnedVec {}

impl PinnedVec {
    /// An empty vector with room for `capacity` scalars, page-locked for use
    /// with the guard's device (and every other device). When the system
    /// refuses to lock it, it stays ordinary memory (copies from it are then
    /// only slower) and a warning is logged.
    pub fn new(guard: &DeviceGuard<'_>, capacity: usize) -> Self {
        let mut pinned = Self::from(Vec::with_capacity(capacity));
        let room = pinned.values.capacity();
        // SAFETY: `room` scalars of 4 words are allocated at the pointer
        // and stay so until `registration` drops (field order above, and
        // `fill` never lets the allocation move while it is registered).
        let registered = unsafe {
            ffi::register_host_scalars(
                guard.ffi_device(),
                pinned.values.as_ptr().cast::<u64>(),
                room,
            )
        };
        match registered {
            Ok(registration) => pinned.registration = Some(registration),
            Err(error) => log::warn!(
                "cannot page-lock {} MiB of MSM scalars ({error}); copying from pageable memory",
                (room * 32) >> 20
            ),
        }
        pinned
    }

    /// Whether the allocation is page-locked.
    pub fn is_pinned(&self) -> bool {
        self.registration.is_some()
    }

    /// How many scalars it holds without moving.
    pub fn capacity(&self) -> usize {
        self.values.capacity()
    }

    /// Empties it, keeping the allocation (and its lock).
    pub fn clear(&mut self) {
        self.values.clear();
    }

    /// Runs `fill` on the vector. Growing it past its capacity moves the
    /// allocation: the lock is then given up (the moved vector is ordinary
    /// memory) rather than left on memory the vector no longer owns.
    pub fn fill<R>(&mut self, fill: impl FnOnce(&mut Vec<Scalar>) -> R) -> R {
        let (place, room) = (self.values.as_ptr(), self.values.capacity());
        let result = fill(&mut self.values);
        if self.registration.is_some()
            && (self.values.as_ptr() != place || self.values.capacity() != room)
        {
            log::warn!("pinned MSM scalars grew past their capacity; unlocking them");
            self.registration = None;
        }
        result
    }

    /// Mutable access to the scalars in place (the length cannot change).
    pub fn as_mut_slice(&mut self) -> &mut [Scalar] {
        &mut self.values
    }
}

impl From<Vec<Scalar>> for PinnedVec {
    /// The vector as it is, not page-locked.
    fn from(values: Vec<Scalar>) -> Self {
        Self {
            registration: None,
            values,
        }
    }
}

impl Deref for PinnedVec {
    type Target = [Scalar];

    fn deref(&self) -> &[Scalar] {
        &self.values
    }
}

impl std::fmt::Debug for PinnedVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedVec")
            .field("len", &self.values.len())
            .field("capacity", &self.values.capacity())
            .field("pinned", &self.is_pinned())
            .finish()
    }
}
