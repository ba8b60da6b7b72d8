//! Scalars held in one device's memory, and the pinned host buffers that
//! stage them on their way there.

use blstrs::Scalar;
use ff::Field;
use parking_lot::Mutex;

use super::curve::as_words;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};
pub(super) use crate::host_pools::parallel_copy;
use crate::host_pools::{copy_pool, run_on};

/// Scalars resident on one device; freed there on drop.
pub struct DeviceScalars {
    handle: cxx::UniquePtr<ffi::DeviceScalars>,
}

// SAFETY: a device pointer plus plain data; its destructor selects its own
// device, and every launch that touches it goes through a DeviceGuard.
unsafe impl Send for DeviceScalars {}
// SAFETY: shared references only read the plain data.
unsafe impl Sync for DeviceScalars {}

impl DeviceScalars {
    /// Copies `values` into a new buffer of `len` scalars on the guard's
    /// device, zero past `values.len()`; returns once the copy has landed.
    pub fn upload(
        guard: &DeviceGuard<'_>,
        values: &[Scalar],
        len: usize,
    ) -> Result<Self, GpuError> {
        if values.len() > len {
            return Err(GpuError::Native(format!(
                "{} scalars do not fit a buffer of {len}",
                values.len()
            )));
        }
        // SAFETY: values.len() scalars of four words each are read.
        let handle = unsafe {
            ffi::upload_scalars(guard.ffi_device(), as_words(values), values.len(), len)
        }?;
        Ok(Self { handle })
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.inner().scalars_len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CUDA ordinal of the device that holds them.
    pub fn ordinal(&self) -> usize {
        self.inner().scalars_ordinal()
    }

    /// The first `n` scalars, copied back.
    pub fn download(&self, guard: &DeviceGuard<'_>, n: usize) -> Result<Vec<Scalar>, GpuError> {
        if n > self.len() {
            return Err(GpuError::Native(format!(
                "download of {n} scalars from a buffer of {}",
                self.len()
            )));
        }
        let mut out = vec![Scalar::ZERO; n];
        // SAFETY: `out` holds n scalars of four words; the C++ side checks
        // the device and the length again.
        unsafe {
            ffi::download_scalars(
                guard.ffi_device(),
                self.inner(),
                out.as_mut_ptr().cast::<u64>(),
                n,
            )
        }?;
        Ok(out)
    }

    pub(crate) fn inner(&self) -> &ffi::DeviceScalars {
        self.handle
            .as_ref()
            .expect("upload_scalars never returns null")
    }
}

/// Page-locked host memory for scalars, reused across uploads: copies from
/// it run at the bus's speed, where copies from ordinary memory go through
/// the driver's bounce buffers.
pub struct PinnedStaging {
    // Dropped first: it waits for the copies still reading the memory.
    /// The stream staged a, b, c uploads go through, kept from one upload
    /// to the next: in single 2^24 proofs, a stream made and destroyed per
    /// upload kept the H lane from its inputs for ~0.65 s after they had
    /// landed (docs/NOTES-gpu.md, eighteenth session).
    stream: Option<cxx::UniquePtr<ffi::UploadStream>>,
    handle: cxx::UniquePtr<ffi::PinnedScalars>,
}

// SAFETY: plain host memory owned by the handle; cudaFreeHost may run on any
// thread.
unsafe impl Send for PinnedStaging {}

impl PinnedStaging {
    /// Pinned memory for `len` scalars, zeroed; an error when the system
    /// refuses to lock that much.
    pub fn new(len: usize) -> Result<Self, GpuError> {
        Ok(Self {
            stream: None,
            handle: ffi::alloc_pinned_scalars(len)?,
        })
    }

    /// Number of scalars it holds.
    pub fn len(&self) -> usize {
        self.inner().pinned_len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The scalars, to fill before an upload.
    pub fn as_mut_slice(&mut self) -> &mut [Scalar] {
        pinned_slice(&self.handle)
    }

    /// The scalars, to read (or to hand to a call that uploads them: they
    /// cross the bus on the copy engine, with no staging).
    pub fn as_slice(&self) -> &[Scalar] {
        let (data, len) = pinned_parts(&self.handle);
        if len == 0 {
            return &[];
        }
        // SAFETY: as in pinned_slice; a shared borrow of the owner, so no
        // mutable view exists while this one lives.
        unsafe { std::slice::from_raw_parts(data, len) }
    }

    /// The scalars and the upload stream for the guard's device, borrowed
    /// together; the stream is made on first use and again when the device
    /// changes.
    pub(super) fn slice_and_stream(
        &mut self,
        guard: &DeviceGuard<'_>,
    ) -> Result<(&mut [Scalar], &ffi::UploadStream), GpuError> {
        let ordinal = guard.device().ordinal();
        let kept = self
            .stream
            .as_ref()
            .and_then(|stream| stream.as_ref())
            .is_some_and(|stream| stream.upload_stream_ordinal() == ordinal);
        if !kept {
            self.stream = None;
            self.stream = Some(ffi::new_upload_stream(guard.ffi_device())?);
        }
        let stream = self
            .stream
            .as_ref()
            .and_then(|stream| stream.as_ref())
            .expect("new_upload_stream never returns null");
        Ok((pinned_slice(&self.handle), stream))
    }

    fn inner(&self) -> &ffi::PinnedScalars {
        self.handle
            .as_ref()
            .expect("alloc_pinned_scalars never returns null")
    }
}

/// Where a pinned allocation's scalars lie, and how many there are.
fn pinned_parts(handle: &cxx::UniquePtr<ffi::PinnedScalars>) -> (*mut Scalar, usize) {
    let pinned = handle
        .as_ref()
        .expect("alloc_pinned_scalars never returns null");
    (pinned.pinned_data().cast::<Scalar>(), pinned.pinned_len())
}

/// The scalars of a pinned allocation, mutable: callers hold its owner
/// mutably, so this is the only view for the borrow's life.
#[allow(clippy::mut_from_ref)]
fn pinned_slice(handle: &cxx::UniquePtr<ffi::PinnedScalars>) -> &mut [Scalar] {
    let (data, len) = pinned_parts(handle);
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the C++ side allocated and zeroed `len` scalars of four words
    // (any bit pattern is a valid blst_fr); both callers borrow the owner
    // mutably, so no other view exists while this one lives.
    unsafe { std::slice::from_raw_parts_mut(data, len) }
}

/// Host scalars to one device through two pinned slots: rayon copies the
/// next piece into one slot while the other crosses the bus. From ordinary
/// memory the driver stages a copy on the calling thread instead (about
/// 9 GB/s on the H200 hosts, a quarter of a 2^24-point MSM's time).
pub struct ScalarUploader {
    // Dropped first: it waits for the copies still reading the slots.
    stream: cxx::UniquePtr<ffi::UploadStream>,
    slots: [PinnedStaging; 2],
}

// SAFETY: a stream, events and pinned host memory, all owned; the C++
// calls select the stream's device themselves.
unsafe impl Send for ScalarUploader {}

/// `to.copy_from_slice(from)` on the copy threads (never behind the
/// caller's rayon work: see [`copy_pool`]).
fn fill_slot(to: &mut [Scalar], from: &[Scalar]) {
    run_on(copy_pool(), || parallel_copy(to, from))
}

impl ScalarUploader {
    /// Scalars per slot: 16 MiB.
    pub const PIECE: usize = 1 << 19;

    /// Slots of [`PIECE`](Self::PIECE) scalars and a stream on the guard's
    /// device; an error when the system refuses the pinned memory.
    pub fn new(guard: &DeviceGuard<'_>) -> Result<Self, GpuError> {
        Self::with_piece(guard, Self::PIECE)
    }

    /// As [`new`](Self::new), with `piece` scalars per slot.
    pub fn with_piece(guard: &DeviceGuard<'_>, piece: usize) -> Result<Self, GpuError> {
        if piece == 0 {
            return Err(GpuError::Native("upload slots of no scalars".into()));
        }
        Ok(Self {
            stream: ffi::new_upload_stream(guard.ffi_device())?,
            slots: [PinnedStaging::new(piece)?, PinnedStaging::new(piece)?],
        })
    }

    /// The CUDA ordinal of the device it uploads to.
    pub fn ordinal(&self) -> usize {
        self.stream
            .as_ref()
            .expect("new_upload_stream never returns null")
            .upload_stream_ordinal()
    }

    /// Copies `values` into a new buffer of `len` scalars on the guard's
    /// device, zero past `values.len()`; returns once the copy has landed.
    pub fn upload(
        &mut self,
        guard: &DeviceGuard<'_>,
        values: &[Scalar],
        len: usize,
    ) -> Result<DeviceScalars, GpuError> {
        let to = DeviceScalars::upload(guard, &[], len.max(values.len()))?;
        let stream = self
            .stream
            .as_ref()
            .expect("new_upload_stream never returns null");
        let piece = self.slots[0].len();
        let mut queue = || -> Result<(), GpuError> {
            for (i, chunk) in values.chunks(piece).enumerate() {
                let slot = i % 2;
                ffi::wait_upload_slot(stream, slot)?;
                let staged = &mut self.slots[slot].as_mut_slice()[..chunk.len()];
                fill_slot(staged, chunk);
                // SAFETY: `staged` is pinned memory of chunk.len() scalars
                // that stays untouched until this slot is waited on again
                // (next time round, or by finish_uploads / the stream's
                // drop); the C++ side checks the device and the range of
                // `to`.
                unsafe {
                    ffi::queue_upload(
                        guard.ffi_device(),
                        stream,
                        slot,
                        staged.as_ptr().cast::<u64>(),
                        chunk.len(),
                        to.inner(),
                        i * piece,
                    )
                }?;
            }
            Ok(())
        };
        after_uploads(stream, queue())?;
        Ok(to)
    }
}

/// A [`ScalarUploader`] made at its first use and shared by its owner's
/// calls (a base set's MSMs, a key's witnesses): one call at a time uses
/// the slots, and the others take the driver's path.
#[derive(Default)]
pub struct SharedUploader(Mutex<Option<ScalarUploader>>);

impl SharedUploader {
    /// `values` in a new buffer on the guard's device, through the pinned
    /// slots; None when another thread holds them or they cannot be had
    /// (no pinned memory, no device memory), each said in a debug line:
    /// the caller then copies from ordinary memory, which reports any error
    /// that is not about staging.
    pub fn try_upload(&self, guard: &DeviceGuard<'_>, values: &[Scalar]) -> Option<DeviceScalars> {
        let mut uploader = self.0.try_lock()?;
        if uploader.is_none() {
            match ScalarUploader::new(guard) {
                Ok(made) => *uploader = Some(made),
                Err(error) => {
                    log::debug!("no pinned upload slots ({error}); copying from ordinary memory");
                    return None;
                }
            }
        }
        let slots = uploader.as_mut()?;
        if slots.ordinal() != guard.device().ordinal() {
            return None; // the driver's path reports the wrong device
        }
        slots
            .upload(guard, values, values.len())
            .map_err(|error| {
                log::debug!("staged scalar upload failed ({error}); copying from ordinary memory")
            })
            .ok()
    }
}

/// `queued`, the outcome of queueing copies on `stream`, once every copy
/// queued there has landed (or stopped): their targets may be freed after
/// this on the error path too, and an error queueing comes first.
pub(super) fn after_uploads<E: From<GpuError>>(
    stream: &ffi::UploadStream,
    queued: Result<(), E>,
) -> Result<(), E> {
    let finished = ffi::finish_uploads(stream).map_err(GpuError::from);
    queued?;
    finished?;
    Ok(())
}

/// Whether `values` lie in page-locked host memory (a [`PinnedStaging`],
/// for one), which needs no staging to cross the bus at full speed.
pub fn is_pinned(values: &[Scalar]) -> bool {
    // SAFETY: the pointer is only looked up, never read.
    !values.is_empty() && unsafe { ffi::is_pinned(values.as_ptr().cast::<u64>()) }
}
