//! Scalars held in one device's memory, and the H polynomial computed there:
//! a proof's a, b, c evaluations go up once and the H MSM reads the result
//! where it lies.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::curve::as_words;
use crate::backend::cpu::Domain;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

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
    /// landed (NOTES-gpu.md, eighteenth session).
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

    /// The scalars and the upload stream for the guard's device, borrowed
    /// together; the stream is made on first use and again when the device
    /// changes.
    fn slice_and_stream(
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

/// The scalars of a pinned allocation, mutable: callers hold its owner
/// mutably, so this is the only view for the borrow's life.
#[allow(clippy::mut_from_ref)]
fn pinned_slice(handle: &cxx::UniquePtr<ffi::PinnedScalars>) -> &mut [Scalar] {
    let pinned = handle
        .as_ref()
        .expect("alloc_pinned_scalars never returns null");
    let len = pinned.pinned_len();
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the C++ side allocated and zeroed `len` scalars of four words
    // (any bit pattern is a valid blst_fr); both callers borrow the owner
    // mutably, so no other view exists while this one lives.
    unsafe { std::slice::from_raw_parts_mut(pinned.pinned_data().cast::<Scalar>(), len) }
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

/// Scalars per rayon task when filling a slot.
const COPY_GRAIN: usize = 1 << 14;

/// The threads that fill upload slots: a pool of their own, so that a copy
/// never waits behind the caller's rayon work (a prover synthesizing its
/// next circuit). In rayon's global pool the slots' copies made pipelined
/// 2^20 proofs a fifth slower. None where the threads cannot be had: the
/// calling thread copies.
fn copiers() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| (n.get() / 2).clamp(1, 8));
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("g16-upload-{i}"))
            .build()
            .map_err(|error| log::warn!("no upload threads ({error}); copying on the caller's"))
            .ok()
    })
    .as_ref()
}

/// `to.copy_from_slice(from)` in grains over the current rayon pool.
fn parallel_copy(to: &mut [Scalar], from: &[Scalar]) {
    to.par_chunks_mut(COPY_GRAIN)
        .zip(from.par_chunks(COPY_GRAIN))
        .for_each(|(to, from)| to.copy_from_slice(from))
}

/// `to.copy_from_slice(from)` on the copier threads.
fn fill_slot(to: &mut [Scalar], from: &[Scalar]) {
    let copy = || parallel_copy(to, from);
    match copiers() {
        Some(pool) => pool.install(copy),
        None => to.copy_from_slice(from),
    }
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
        for (i, chunk) in values.chunks(piece).enumerate() {
            let slot = i % 2;
            ffi::wait_upload_slot(stream, slot)?;
            let staged = &mut self.slots[slot].as_mut_slice()[..chunk.len()];
            fill_slot(staged, chunk);
            // SAFETY: `staged` is pinned memory of chunk.len() scalars that
            // stays untouched until this slot is waited on again (next time
            // round, or by finish_uploads / the stream's drop); the C++ side
            // checks the device and the range of `to`.
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
        ffi::finish_uploads(stream)?;
        Ok(to)
    }
}

/// Whether `values` lie in page-locked host memory (a [`PinnedStaging`],
/// for one), which needs no staging to cross the bus at full speed.
pub fn is_pinned(values: &[Scalar]) -> bool {
    // SAFETY: the pointer is only looked up, never read.
    !values.is_empty() && unsafe { ffi::is_pinned(values.as_ptr().cast::<u64>()) }
}

/// A proof's a, b, c evaluations on one device, zero-padded to the domain:
/// the input of the H polynomial.
pub struct HInputs {
    a: DeviceScalars,
    b: DeviceScalars,
    c: DeviceScalars,
}

impl HInputs {
    /// a, b, c already on one device, each of the domain's size.
    pub(super) fn from_device(a: DeviceScalars, b: DeviceScalars, c: DeviceScalars) -> Self {
        Self { a, b, c }
    }

    /// The first `n` of a, b and c, copied back.
    pub fn download(
        &self,
        guard: &DeviceGuard<'_>,
        n: usize,
    ) -> Result<[Vec<Scalar>; 3], GpuError> {
        Ok([
            self.a.download(guard, n)?,
            self.b.download(guard, n)?,
            self.c.download(guard, n)?,
        ])
    }

    /// Uploads a, b, c (each `n` <= m long) into buffers of the domain's
    /// size m; returns once the copies have landed.
    pub fn upload(
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<Self, GpuError> {
        let m = domain.size();
        if a.len() != b.len() || a.len() != c.len() || a.len() > m {
            return Err(GpuError::Native(format!(
                "H polynomial of {}, {} and {} evaluations over a domain of {m}",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        Ok(Self {
            a: DeviceScalars::upload(guard, a, m)?,
            b: DeviceScalars::upload(guard, b, m)?,
            c: DeviceScalars::upload(guard, c, m)?,
        })
    }

    /// [`upload`](Self::upload) through `staging` (at least 3 n scalars):
    /// a, b, c are copied there piece by piece over the cores, each piece
    /// sent on an upload stream as soon as it is staged, so the bus carries
    /// one piece while the next is copied (one after the other, the copies
    /// and the three transfers made a 4M-constraint proof wait ~64 ms).
    /// Falls back to the plain upload when `staging` is too small.
    pub fn upload_staged(
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        staging: &mut PinnedStaging,
    ) -> Result<Self, GpuError> {
        let n = a.len();
        if b.len() != n || c.len() != n || n > domain.size() || staging.len() < 3 * n {
            return Self::upload(guard, domain, a, b, c);
        }
        Self::upload_filled(guard, domain, n, staging, |first, staged| {
            for (to, from) in staged.into_iter().zip([a, b, c]) {
                parallel_copy(to, &from[first..first + to.len()]);
            }
            Ok::<(), GpuError>(())
        })
    }

    /// n rows of a, b, c (n no more than the domain, `staging` at least
    /// 3 n scalars), written into `staging` by `fill(first, [a, b, c])` a
    /// piece of rows at a time and each piece queued on an upload stream
    /// as soon as it is written: the bus carries one piece while `fill`
    /// makes the next. Returns once every piece has landed; `fill`'s error
    /// stops the upload.
    pub fn upload_filled<E: From<GpuError>>(
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        n: usize,
        staging: &mut PinnedStaging,
        fill: impl FnMut(usize, [&mut [Scalar]; 3]) -> Result<(), E>,
    ) -> Result<Self, E> {
        let m = domain.size();
        if n > m || staging.len() < 3 * n {
            return Err(GpuError::Native(format!(
                "{n} rows of a, b, c over a domain of {m} through {} staged scalars",
                staging.len()
            ))
            .into());
        }
        let targets = [
            DeviceScalars::upload(guard, &[], m)?,
            DeviceScalars::upload(guard, &[], m)?,
            DeviceScalars::upload(guard, &[], m)?,
        ];
        let (staged, stream) = staging.slice_and_stream(guard)?;
        let queued = queue_pieces(guard, n, staged, stream, &targets, fill);
        // Every copy has landed (or stopped) before the targets can drop.
        let finished = ffi::finish_uploads(stream).map_err(GpuError::from);
        queued?;
        finished?;
        let [a, b, c] = targets;
        Ok(Self { a, b, c })
    }

    /// The coefficients of (A B - C) / Z, left on the device (m scalars, the
    /// last one zero; the H MSM reads the first m - 1), with the device time
    /// in milliseconds. `domain` must be the one the inputs were uploaded for.
    pub fn compute(
        self,
        guard: &DeviceGuard<'_>,
        domain: &Domain,
    ) -> Result<(DeviceScalars, f32), GpuError> {
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let constants = [
            domain.omega(),
            domain.omega_inverse(),
            domain.size_inverse(),
            g,
            g.invert().unwrap(),
            domain.vanishing_on_coset().invert().unwrap(),
        ];
        let mut device_ms = 0f32;
        // SAFETY: `constants` is the six scalars h_polynomial reads; the
        // three buffers' device and lengths are checked on the C++ side.
        unsafe {
            ffi::h_polynomial(
                guard.ffi_device(),
                self.a.inner(),
                self.b.inner(),
                self.c.inner(),
                as_words(&constants),
                &mut device_ms,
            )
        }?;
        Ok((self.a, device_ms))
    }
}

/// Fills the staging buffer `staged` with n rows of a, b, c a piece at a
/// time through `fill`, queueing each piece's copies into `targets` on
/// `stream` as soon as it is filled; the caller waits for the stream.
fn queue_pieces<E: From<GpuError>>(
    guard: &DeviceGuard<'_>,
    n: usize,
    staged: &mut [Scalar],
    stream: &ffi::UploadStream,
    targets: &[DeviceScalars; 3],
    mut fill: impl FnMut(usize, [&mut [Scalar]; 3]) -> Result<(), E>,
) -> Result<(), E> {
    let piece = ScalarUploader::PIECE;
    let (a_region, rest) = staged[..3 * n].split_at_mut(n);
    let (b_region, c_region) = rest.split_at_mut(n);
    let pieces = a_region
        .chunks_mut(piece)
        .zip(b_region.chunks_mut(piece))
        .zip(c_region.chunks_mut(piece));
    // Where the upload's time goes, for the debug log: filling the pieces
    // and queueing their copies.
    let (mut filling, mut queueing) = (Duration::ZERO, Duration::ZERO);
    for (k, ((a, b), c)) in pieces.enumerate() {
        let began = Instant::now();
        fill(k * piece, [&mut *a, &mut *b, &mut *c])?;
        let filled = Instant::now();
        filling += filled - began;
        for (slot, (staged, to)) in [&*a, &*b, &*c].into_iter().zip(targets).enumerate() {
            // SAFETY: `staged` is pinned memory of staged.len() scalars, a
            // region no other piece uses, untouched until the caller has
            // waited for the stream; the C++ side checks the device and the
            // range of `to`.
            unsafe {
                ffi::queue_upload(
                    guard.ffi_device(),
                    stream,
                    slot % 2,
                    staged.as_ptr().cast::<u64>(),
                    staged.len(),
                    to.inner(),
                    k * piece,
                )
            }
            .map_err(GpuError::from)?;
        }
        queueing += filled.elapsed();
    }
    log::debug!(
        "a, b, c staged: {n} rows filled in {:.3} s, copies queued in {:.3} s",
        filling.as_secs_f64(),
        queueing.as_secs_f64()
    );
    Ok(())
}

/// The H polynomial on the guard's device: [`HInputs::upload`] then
/// [`HInputs::compute`].
pub fn h_polynomial(
    guard: &DeviceGuard<'_>,
    domain: &Domain,
    a: &[Scalar],
    b: &[Scalar],
    c: &[Scalar],
) -> Result<(DeviceScalars, f32), GpuError> {
    HInputs::upload(guard, domain, a, b, c)?.compute(guard, domain)
}
