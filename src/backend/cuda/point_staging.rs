//! Page-locked host memory that stages chunks of a key's points for the
//! bus: a copy from it runs at the bus's speed on the copy engine, where a
//! copy from the key's ordinary memory goes through the driver's bounce
//! buffers on the calling thread (~5 GB/s for points, measured on an H100).

use super::curve::{as_words, GpuCurve};
use super::pinned_vec::PinnedVec;
use crate::device::DeviceGuard;
use crate::host_pools::parallel_copy;
use blstrs::Scalar;
use ff::Field;

/// A fixed-size page-locked buffer (ordinary memory where the system
/// refuses to lock it), filled with one chunk of points at a time.
pub struct PointStaging {
    /// The storage, in 32-byte units: every affine point is a whole number
    /// of them (G1 3, G2 6), and their alignment suits both groups.
    storage: PinnedVec,
}

impl PointStaging {
    /// Room for `bytes` of points, page-locked for the guard's device (and
    /// the others) where the system allows.
    pub fn new(guard: &DeviceGuard<'_>, bytes: usize) -> Self {
        let units = bytes.div_ceil(32);
        let mut storage = PinnedVec::new(guard, units);
        storage.fill(|values| values.resize(units, Scalar::ZERO));
        Self { storage }
    }

    /// Bytes it holds.
    pub fn bytes(&self) -> usize {
        self.storage.len() * 32
    }

    /// How many points of `G` it holds.
    pub fn points<G: GpuCurve>(&self) -> usize {
        self.bytes() / std::mem::size_of::<G>()
    }

    /// Whether it is page-locked.
    pub fn is_pinned(&self) -> bool {
        self.storage.is_pinned()
    }

    /// Its storage as words for the device's copies, where page-locked
    /// (a copy through ordinary memory would gain nothing).
    pub(crate) fn pinned_words(&mut self) -> Option<&mut [u64]> {
        if !self.is_pinned() {
            return None;
        }
        let storage = self.storage.as_mut_slice();
        let words = storage.len() * 4;
        // SAFETY: the storage is len() initialized scalars of 4 words each
        // (plain data), borrowed mutably for the slice's life.
        Some(unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<u64>(), words) })
    }

    /// Copies `points` in over the host's cores and returns them as they lie
    /// in the buffer. More points than [`points`](Self::points) is a bug of
    /// the caller's (panics).
    pub fn stage<G: GpuCurve>(&mut self, points: &[G]) -> &[G]
    where
        G::Curve: Send + Sync,
    {
        assert!(
            points.len() <= self.points::<G>(),
            "a chunk larger than its staging"
        );
        let words = points.len() * G::AFFINE_WORDS;
        let storage = self.storage.as_mut_slice();
        // SAFETY: the storage holds len() * 4 initialized words (zeroed
        // scalars) and is borrowed mutably here; `words` fits (checked above).
        let into =
            unsafe { std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<u64>(), words) };
        // SAFETY: `points` are `words` words of blst affine points (plain
        // data, layout checked by tests/gpu_ffi_layout.rs).
        let from = unsafe { std::slice::from_raw_parts(as_words(points), words) };
        parallel_copy(into, from);
        // SAFETY: the words just copied are the points' own bytes, so they
        // read back as those points; the storage's alignment (8) is theirs,
        // and the slice borrows `self`, so nothing changes it meanwhile.
        unsafe { std::slice::from_raw_parts(into.as_ptr().cast::<G>(), points.len()) }
    }
}
