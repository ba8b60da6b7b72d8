//! MSM and batch addition on the GPU, with bases uploaded per call or
//! resident on the device across calls.

use std::marker::PhantomData;
use std::time::Instant;

use blstrs::Scalar;
use group::Group;
use parking_lot::Mutex;

use super::curve::{as_words, combine_windows, GpuCurve, MAX_WINDOWS};
use super::device_scalars::{is_pinned, DeviceScalars, ScalarUploader};
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};

/// How long the device spent on one call, and how it was cut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MsmTiming {
    /// Device time by CUDA events, from the scalar (or bitmap) upload to the
    /// last result on the device, in milliseconds; for scalars staged
    /// through pinned slots (see [`ResidentBases::msm`]), the staged
    /// upload's wall time plus the events' time from the device copy on.
    pub device_ms: f32,
    /// Bits between the bucket method's window sums: its window bits, or
    /// those times the copies where it went through shifted copies (0 for
    /// batch addition).
    pub window_bits: u32,
}

/// Affine bases held in one device's memory across calls; freed on drop.
pub struct ResidentBases<G: GpuCurve>
where
    G::Curve: Send + Sync,
{
    handle: cxx::UniquePtr<ffi::MsmBases>,
    /// Pinned slots for host scalars, made at the first large MSM.
    uploader: Mutex<Option<ScalarUploader>>,
    _curve: PhantomData<G>,
}

/// Host scalars from this many on reach the device through pinned slots
/// ([`ScalarUploader`]); fewer are copied by the driver from where they lie.
const STAGED_FROM: usize = 1 << 16;

// SAFETY: the C++ MsmBases is a device pointer plus plain data; it is only
// read after construction, its destructor selects its own device before
// freeing, and every launch that reads it goes through a DeviceGuard.
unsafe impl<G: GpuCurve> Send for ResidentBases<G> where G::Curve: Send + Sync {}
// SAFETY: as above; shared references only read plain data.
unsafe impl<G: GpuCurve> Sync for ResidentBases<G> where G::Curve: Send + Sync {}

/// `first..first + n` within `len` resident `items`, else an error naming
/// them.
fn check_span(what: &str, items: &str, first: usize, n: usize, len: usize) -> Result<(), GpuError> {
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
            uploader: Mutex::new(None),
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

    /// An error unless the bases `first..first + n` are resident.
    fn check_range(&self, what: &str, first: usize, n: usize) -> Result<(), GpuError> {
        check_span(what, "points", first, n, self.len())
    }

    fn bases(&self) -> &ffi::MsmBases {
        self.handle
            .as_ref()
            .expect("upload_msm_bases never returns null")
    }

    /// Σ `scalars[i]` · `bases[i]` over the first `scalars.len()` bases.
    /// Large sets of scalars in ordinary memory go to the device through
    /// this base set's pinned slots ([`ScalarUploader`], 32 MiB, made at
    /// the first such call); while another thread uses them, or where they
    /// cannot be had, the driver copies from ordinary memory instead.
    pub fn msm(&self, guard: &DeviceGuard<'_>, scalars: &[Scalar]) -> Result<G::Curve, GpuError> {
        self.msm_timed(guard, scalars).map(|(sum, _)| sum)
    }

    /// [`msm`](Self::msm), with the device time.
    pub fn msm_timed(
        &self,
        guard: &DeviceGuard<'_>,
        scalars: &[Scalar],
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.msm_range_timed(guard, 0, scalars)
    }

    /// Σ `scalars[i]` · `bases[first + i]`: the MSM over the bases
    /// `first..first + scalars.len()`, so that devices holding the same
    /// bases can each take a part of one MSM.
    pub fn msm_range(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
    ) -> Result<G::Curve, GpuError> {
        self.msm_range_timed(guard, first, scalars)
            .map(|(sum, _)| sum)
    }

    /// [`msm_range`](Self::msm_range) with the scalars copied by the driver
    /// from where they lie, never through the pinned slots: for callers
    /// whose host threads are busy meanwhile. A prover synthesizing its next
    /// circuit is one: there the slots' copies compete with synthesis for
    /// the cores, and pipelined 2^20 proofs took 215-227 ms each without
    /// them against 244-264 ms with them (one H200), while its other lanes'
    /// kernels hide the slower copies.
    pub fn msm_range_direct(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
    ) -> Result<G::Curve, GpuError> {
        self.check_range("MSM scalars over resident bases", first, scalars.len())?;
        self.msm_copied_by_driver(guard, first, scalars)
            .map(|(sum, _)| sum)
    }

    fn msm_range_timed(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.check_range("MSM scalars over resident bases", first, scalars.len())?;
        if scalars.len() >= STAGED_FROM && !is_pinned(scalars) {
            if let Some(staged) = self.msm_staged(guard, first, scalars) {
                return staged;
            }
        }
        self.msm_copied_by_driver(guard, first, scalars)
    }

    /// The MSM over bases `first..` with the driver copying the scalars.
    fn msm_copied_by_driver(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        // SAFETY: scalars.len() scalars of 4 words each are read; the C++
        // side checks the bases' device, group and range.
        self.run_windows(scalars.len(), |out, out_words, device_ms| unsafe {
            ffi::msm_windows(
                guard.ffi_device(),
                self.bases(),
                first,
                as_words(scalars),
                scalars.len(),
                out,
                out_words,
                device_ms,
            )
        })
    }

    /// The MSM with `scalars` uploaded through the pinned slots first; None
    /// when the slots are busy (another thread's call) or cannot be had (no
    /// pinned memory, no device memory for the copy): the caller then takes
    /// the driver's path, which reports any error that is not about staging.
    fn msm_staged(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
    ) -> Option<Result<(G::Curve, MsmTiming), GpuError>> {
        if guard.device().ordinal() != self.ordinal() {
            return None; // the driver's path reports the wrong device
        }
        let mut uploader = self.uploader.try_lock()?;
        if uploader.is_none() {
            match ScalarUploader::new(guard) {
                Ok(made) => *uploader = Some(made),
                Err(error) => {
                    log::debug!(
                        "no pinned upload slots ({error}); scalars go from ordinary memory"
                    );
                    return None;
                }
            }
        }
        let started = Instant::now();
        let uploaded = uploader.as_mut()?.upload(guard, scalars, scalars.len());
        drop(uploader);
        let on_device = match uploaded {
            Ok(on_device) => on_device,
            Err(error) => {
                log::debug!("staged scalar upload failed ({error}); copying from ordinary memory");
                return None;
            }
        };
        let upload_ms = started.elapsed().as_secs_f32() * 1e3;
        Some(
            self.msm_device_range(guard, first, &on_device, 0, scalars.len())
                .map(|(sum, timing)| {
                    let device_ms = timing.device_ms + upload_ms;
                    (
                        sum,
                        MsmTiming {
                            device_ms,
                            ..timing
                        },
                    )
                }),
        )
    }

    /// Σ `scalars[i]` · `bases[indices[i]]`: an MSM over a sparse subset of the
    /// resident bases (a witness's few full-field values among its bits).
    /// An index past the resident bases is an error.
    pub fn msm_indexed(
        &self,
        guard: &DeviceGuard<'_>,
        scalars: &[Scalar],
        indices: &[u32],
    ) -> Result<G::Curve, GpuError> {
        if scalars.len() != indices.len() {
            return Err(mismatch(
                "indexed MSM scalars and indices",
                scalars.len(),
                indices.len(),
            ));
        }
        // SAFETY: scalars.len() scalars of 4 words and as many indices are
        // read; the C++ side checks every index against the bases.
        self.run_windows(scalars.len(), |out, out_words, device_ms| unsafe {
            ffi::msm_windows_indexed(
                guard.ffi_device(),
                self.bases(),
                as_words(scalars),
                indices.as_ptr(),
                scalars.len(),
                out,
                out_words,
                device_ms,
            )
        })
        .map(|(sum, _)| sum)
    }

    /// Runs one window-sum call over `n` scalars (none: the identity) and
    /// combines its windows.
    fn run_windows(
        &self,
        n: usize,
        call: impl FnOnce(*mut u64, usize, *mut f32) -> Result<u32, cxx::Exception>,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        let mut timing = MsmTiming {
            device_ms: 0.0,
            window_bits: 0,
        };
        if n == 0 {
            return Ok((G::Curve::identity(), timing));
        }
        // `out` has out.len() words; the C++ side writes at most that many.
        let mut out = vec![0u64; MAX_WINDOWS * G::JACOBIAN_WORDS];
        timing.window_bits = call(out.as_mut_ptr(), out.len(), &mut timing.device_ms)?;
        Ok((combine_windows::<G>(&out, timing.window_bits), timing))
    }

    /// Σ `scalars[i]` · `bases[i]` over the first `n` scalars of a buffer that
    /// already lies on the device (the H polynomial's result).
    pub fn msm_device_scalars(
        &self,
        guard: &DeviceGuard<'_>,
        scalars: &DeviceScalars,
        n: usize,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.msm_device_range(guard, 0, scalars, 0, n)
    }

    /// Σ `scalars[scalar_first + i]` · `bases[i]` over `n` scalars of a
    /// buffer on the device: a chunk of a streamed query's bases times its
    /// share of scalars that stay on the device (the H polynomial's).
    pub fn msm_device_scalars_from(
        &self,
        guard: &DeviceGuard<'_>,
        scalars: &DeviceScalars,
        scalar_first: usize,
        n: usize,
    ) -> Result<G::Curve, GpuError> {
        self.msm_device_range(guard, 0, scalars, scalar_first, n)
            .map(|(sum, _)| sum)
    }

    /// Σ `scalars[scalar_first + i]` · `bases[first + i]` over `n` scalars
    /// of a buffer on the device.
    fn msm_device_range(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &DeviceScalars,
        scalar_first: usize,
        n: usize,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        check_span(
            "MSM over resident scalars",
            "scalars",
            scalar_first,
            n,
            scalars.len(),
        )?;
        self.check_range("MSM over resident scalars and bases", first, n)?;
        // SAFETY: the C++ side checks the scalars' and bases' devices, the
        // group and the ranges of both.
        self.run_windows(n, |out, out_words, device_ms| unsafe {
            ffi::msm_windows_resident(
                guard.ffi_device(),
                self.bases(),
                first,
                scalars.inner(),
                scalar_first,
                n,
                out,
                out_words,
                device_ms,
            )
        })
    }

    /// Σ of the first `n` bases whose bit is set in `bits` (bit i of word
    /// i / 64, as [`pack_bits`](super::pack_bits) or a density bitmap lays them out);
    /// `bits` must hold at least `n` bits.
    pub fn batch_add(
        &self,
        guard: &DeviceGuard<'_>,
        bits: &[u64],
        n: usize,
    ) -> Result<G::Curve, GpuError> {
        self.batch_add_timed(guard, bits, n).map(|(sum, _)| sum)
    }

    /// [`batch_add`](Self::batch_add), with the device time.
    pub fn batch_add_timed(
        &self,
        guard: &DeviceGuard<'_>,
        bits: &[u64],
        n: usize,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.batch_add_range_timed(guard, 0, bits, n)
    }

    /// Σ of the `bases[first + i]`, i < n, whose bit i is set in `bits`: the
    /// batch addition over the bases `first..first + n` (a density bitmap's
    /// words from word k on cover the bases from 64 k on).
    pub fn batch_add_range(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        bits: &[u64],
        n: usize,
    ) -> Result<G::Curve, GpuError> {
        self.batch_add_range_timed(guard, first, bits, n)
            .map(|(sum, _)| sum)
    }

    fn batch_add_range_timed(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        bits: &[u64],
        n: usize,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.check_range("batch addition over resident bases", first, n)?;
        if bits.len() < n.div_ceil(64) {
            return Err(mismatch("bitmap words", bits.len(), n.div_ceil(64)));
        }
        let mut out = vec![0u64; G::JACOBIAN_WORDS];
        let mut device_ms = 0f32;
        // SAFETY: ceil(n / 64) bitmap words are read (checked above); `out`
        // holds one Jacobian point.
        unsafe {
            ffi::batch_add(
                guard.ffi_device(),
                self.bases(),
                first,
                bits.as_ptr(),
                n,
                out.as_mut_ptr(),
                out.len(),
                &mut device_ms,
            )
        }?;
        let timing = MsmTiming {
            device_ms,
            window_bits: 0,
        };
        Ok((G::from_jacobian_words(&out), timing))
    }
}

/// MSMs of this many points or more go through a base set's shifted copies
/// where it has them ([`ResidentBases::precompute`]).
pub fn copies_from() -> usize {
    ffi::msm_copies_from()
}
