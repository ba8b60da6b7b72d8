//! Affine bases resident on one device across calls ([`ResidentBases`]):
//! their upload, refill, shifted copies and sizes, and the MSM tuning their
//! calls run with. The MSMs and batch additions over them are in msm.rs.

use std::marker::PhantomData;

use super::curve::{as_words, GpuCurve};
use super::device_scalars::SharedUploader;
use super::tuning::MsmTuning;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

/// Affine bases held in one device's memory across calls; freed on drop.
/// Their MSMs run with the bases' [`tuning`](Self::tuning), the library's
/// choices unless [`with_tuning`](Self::with_tuning) or
/// [`set_tuning`](Self::set_tuning) named others;
/// [`msm_range_tuned`](Self::msm_range_tuned) takes one for a single call.
pub struct ResidentBases<G: GpuCurve>
where
    G::Curve: Send + Sync,
{
    handle: cxx::UniquePtr<ffi::MsmBases>,
    /// How this set's MSMs run unless a call names its own tuning.
    tuning: MsmTuning,
    /// Pinned slots for host scalars, made at the first large MSM.
    pub(super) uploader: SharedUploader,
    _curve: PhantomData<G>,
}

// SAFETY: the C++ MsmBases is a device pointer plus plain data; it is only
// read after construction, its destructor selects its own device before
// freeing, and every launch that reads it goes through a DeviceGuard.
unsafe impl<G: GpuCurve> Send for ResidentBases<G> where G::Curve: Send + Sync {}
// SAFETY: as above; shared references only read plain data.
unsafe impl<G: GpuCurve> Sync for ResidentBases<G> where G::Curve: Send + Sync {}

/// `first..first + n` within `len` resident `items`, else an error naming
/// them.
pub(super) fn check_span(
    what: &str,
    items: &str,
    first: usize,
    n: usize,
    len: usize,
) -> Result<(), GpuError> {
    match first.checked_add(n) {
        Some(end) if end <= len => Ok(()),
        _ => Err(GpuError::Native(format!(
            "{what}: {items} {first}..{first}+{n}, but {len} are resident"
        ))),
    }
}

pub(super) fn mismatch(what: &str, got: usize, want: usize) -> GpuError {
    GpuError::Native(format!("{what}: got {got}, expected {want}"))
}

impl<G: GpuCurve> ResidentBases<G>
where
    G::Curve: Send + Sync,
{
    /// Copies `bases` to the guard's device. Too little device memory is an
    /// error (the device stays usable).
    pub fn upload(guard: &DeviceGuard<'_>, bases: &[G]) -> Result<Self, GpuError> {
        debug_assert_eq!(std::mem::size_of::<G>(), G::AFFINE_WORDS * 8);
        // SAFETY: `bases` is bases.len() points of AFFINE_WORDS words each
        // (blst layout, checked by tests/gpu_ffi_layout.rs), read only.
        let handle = unsafe {
            ffi::upload_msm_bases(guard.ffi_device(), G::IS_G2, as_words(bases), bases.len())
        }?;
        debug_assert_eq!(handle.as_ref().map(|h| h.is_g2()), Some(G::IS_G2));
        Ok(Self {
            handle,
            tuning: MsmTuning::default(),
            uploader: SharedUploader::default(),
            _curve: PhantomData,
        })
    }

    /// Replaces the points with `bases` in the same device allocation, no
    /// allocation and no free: a chunked upload reuses its buffers this
    /// way, where a cudaFree would wait for all of the device's work. Bases
    /// holding shifted copies, or more points than
    /// [`capacity`](Self::capacity), are an error; after a failed copy no
    /// point is resident.
    pub fn refill(&mut self, guard: &DeviceGuard<'_>, bases: &[G]) -> Result<(), GpuError> {
        // SAFETY: as upload's; `&mut self` means no MSM over these bases is
        // running (every MSM here has its result before it returns).
        unsafe {
            ffi::refill_msm_bases(
                guard.ffi_device(),
                self.handle.pin_mut(),
                as_words(bases),
                bases.len(),
            )
        }?;
        Ok(())
    }

    /// Points the device allocation has room for: [`len`](Self::len), or
    /// more after a [`refill`](Self::refill) with fewer.
    pub fn capacity(&self) -> usize {
        self.bases().capacity()
    }

    /// Adds shifted copies of the points for `bits`-bit windows (`None`:
    /// chosen by their number, 20 bits from 2^20 points, else 16), a copy
    /// per window (ceil(256 / bits) in all), each 2^bits times the one
    /// before. An MSM of [`copies_from`] points or more then adds every
    /// window into one set of buckets through them: wider windows, so fewer
    /// additions, for the reduction of one window. Smaller MSMs and batch
    /// additions use the points as before. The copies take
    /// [`copies_bytes`](Self::copies_bytes) of device memory; where it is
    /// not free the error says so and the bases stay as they were.
    pub fn precompute(
        &mut self,
        guard: &DeviceGuard<'_>,
        bits: Option<u32>,
    ) -> Result<(), GpuError> {
        self.precompute_some(guard, bits, None)
    }

    /// [`precompute`](Self::precompute) with `copies` copies in all
    /// (`None`: one per window; else 2 up to the windows), for less memory:
    /// window w then adds into bucket set w / copies through copy
    /// w % copies, so an MSM reduces ceil(windows / copies) sets instead of
    /// one, still at the copies' window width.
    pub fn precompute_some(
        &mut self,
        guard: &DeviceGuard<'_>,
        bits: Option<u32>,
        copies: Option<u32>,
    ) -> Result<(), GpuError> {
        let copied = ffi::precompute_msm_bases(
            guard.ffi_device(),
            self.bases(),
            bits.unwrap_or(0),
            copies.unwrap_or(0),
        )?;
        self.handle = copied;
        Ok(())
    }

    /// Copies of the points held: 1 without [`precompute`](Self::precompute).
    pub fn copies(&self) -> u32 {
        self.bases().copies()
    }

    /// The window bits of the shifted copies, if there are any.
    pub fn copy_bits(&self) -> Option<u32> {
        Some(self.bases().copy_bits()).filter(|&bits| bits > 0)
    }

    /// Device bytes the points (and their copies) take.
    pub fn device_bytes(&self) -> u64 {
        Self::bytes_of_copies(self.capacity(), self.copies())
    }

    /// Device bytes that [`precompute`](Self::precompute) holds for `len`
    /// points at `bits` (`None`: its own choice), the points' copy 0
    /// included; bits it would refuse are an error.
    pub fn copies_bytes(len: usize, bits: Option<u32>) -> Result<u64, GpuError> {
        let copies = Self::window_copies(len, bits)?;
        Ok(Self::bytes_of_copies(len, copies))
    }

    /// The copies [`precompute`](Self::precompute) makes for `len` points
    /// at `bits` (`None`: its own choice): one per window.
    pub fn window_copies(len: usize, bits: Option<u32>) -> Result<u32, GpuError> {
        Ok(ffi::shifted_copy_count(len, bits.unwrap_or(0))?)
    }

    /// The window bits of the copies [`precompute`](Self::precompute) makes
    /// for `len` points at `bits` (`None`: its own choice).
    pub fn window_copy_bits(len: usize, bits: Option<u32>) -> Result<u32, GpuError> {
        Ok(ffi::shifted_copy_bits(len, bits.unwrap_or(0))?)
    }

    /// Device bytes of `copies` copies of `len` points, copy 0 included.
    pub fn bytes_of_copies(len: usize, copies: u32) -> u64 {
        len as u64 * u64::from(copies) * (G::AFFINE_WORDS as u64 * 8)
    }

    /// Number of resident points.
    pub fn len(&self) -> usize {
        self.bases().len()
    }

    /// Whether no point is resident.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CUDA ordinal of the device that holds the points.
    pub fn ordinal(&self) -> usize {
        self.bases().bases_ordinal()
    }

    /// These bases with their MSMs run as `tuning` says.
    pub fn with_tuning(mut self, tuning: MsmTuning) -> Self {
        self.tuning = tuning;
        self
    }

    /// Runs the later MSMs over these bases as `tuning` says.
    pub fn set_tuning(&mut self, tuning: MsmTuning) {
        self.tuning = tuning;
    }

    /// How the MSMs over these bases run (the default unless set).
    pub fn tuning(&self) -> &MsmTuning {
        &self.tuning
    }

    /// An error unless the bases `first..first + n` are resident.
    pub(super) fn check_range(&self, what: &str, first: usize, n: usize) -> Result<(), GpuError> {
        check_span(what, "points", first, n, self.len())
    }

    pub(super) fn bases(&self) -> &ffi::MsmBases {
        self.handle
            .as_ref()
            .expect("upload_msm_bases never returns null")
    }
}

/// MSMs of this many points or more go through a base set's shifted copies
/// where it has them ([`ResidentBases::precompute`]).
pub fn copies_from() -> usize {
    ffi::msm_copies_from()
}
