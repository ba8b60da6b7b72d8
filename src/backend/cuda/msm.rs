//! MSM and batch addition over [`ResidentBases`], each MSM run as the
//! bases' tuning (or the call's own) says.

use std::time::Instant;

use blstrs::Scalar;
use group::Group;

use super::curve::{as_words, combine_windows, GpuCurve, MAX_WINDOWS};
use super::device_scalars::{is_pinned, DeviceScalars};
use super::resident::{check_span, mismatch, ResidentBases};
use super::tuning::{MsmRun, MsmTuning};
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};
use crate::ffi_types::{g16_msm_report, g16_msm_tuning};

/// How long the device spent on one call, and how it was cut.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
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
    /// The settings the MSM ran with, its tuning's defaults filled in, and
    /// how it cut the work (all zero for batch addition).
    pub run: MsmRun,
}

/// Host scalars from this many on reach the device through pinned slots
/// ([`ScalarUploader`](super::ScalarUploader)); fewer are copied by the driver from where they lie.
const STAGED_FROM: usize = 1 << 16;

impl<G: GpuCurve> ResidentBases<G>
where
    G::Curve: Send + Sync,
{
    /// Σ `scalars[i]` · `bases[i]` over the first `scalars.len()` bases.
    /// Large sets of scalars in ordinary memory go to the device through
    /// this base set's pinned slots ([`ScalarUploader`](super::ScalarUploader), 32 MiB, made at
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
        self.msm_range_tuned(guard, 0, scalars, self.tuning())
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
        self.msm_range_tuned(guard, first, scalars, self.tuning())
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
        self.msm_copied_by_driver(guard, first, scalars, self.tuning())
            .map(|(sum, _)| sum)
    }

    /// [`msm_range`](Self::msm_range) run as `tuning` says instead of the
    /// bases' own tuning, with the device time and what the call ran with:
    /// callers sharing one base set may each run their own settings.
    pub fn msm_range_tuned(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
        tuning: &MsmTuning,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.check_range("MSM scalars over resident bases", first, scalars.len())?;
        if scalars.len() >= STAGED_FROM && !is_pinned(scalars) {
            if let Some(staged) = self.msm_staged(guard, first, scalars, tuning) {
                return staged;
            }
        }
        self.msm_copied_by_driver(guard, first, scalars, tuning)
    }

    /// The MSM over bases `first..` with the driver copying the scalars.
    fn msm_copied_by_driver(
        &self,
        guard: &DeviceGuard<'_>,
        first: usize,
        scalars: &[Scalar],
        tuning: &MsmTuning,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        // SAFETY: scalars.len() scalars of 4 words each are read; the C++
        // side checks the bases' device, group and range.
        self.run_windows(
            scalars.len(),
            tuning,
            |out, out_words, tuning, report| unsafe {
                ffi::msm_windows(
                    guard.ffi_device(),
                    self.bases(),
                    first,
                    as_words(scalars),
                    scalars.len(),
                    out,
                    out_words,
                    tuning,
                    report,
                )
            },
        )
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
        tuning: &MsmTuning,
    ) -> Option<Result<(G::Curve, MsmTiming), GpuError>> {
        if guard.device().ordinal() != self.ordinal() {
            return None; // the driver's path reports the wrong device
        }
        let started = Instant::now();
        let on_device = self.uploader.try_upload(guard, scalars)?;
        let upload_ms = started.elapsed().as_secs_f32() * 1e3;
        Some(
            self.msm_device_range(guard, first, &on_device, 0, scalars.len(), tuning)
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
        self.run_windows(
            scalars.len(),
            self.tuning(),
            |out, out_words, tuning, report| unsafe {
                ffi::msm_windows_indexed(
                    guard.ffi_device(),
                    self.bases(),
                    as_words(scalars),
                    indices.as_ptr(),
                    scalars.len(),
                    out,
                    out_words,
                    tuning,
                    report,
                )
            },
        )
        .map(|(sum, _)| sum)
    }

    /// Runs one window-sum call over `n` scalars (none: the identity, once
    /// the tuning is checked) as `tuning` says, and combines its windows.
    fn run_windows(
        &self,
        n: usize,
        tuning: &MsmTuning,
        call: impl FnOnce(
            *mut u64,
            usize,
            *const g16_msm_tuning,
            *mut g16_msm_report,
        ) -> Result<u32, cxx::Exception>,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        let tuning = tuning.to_ffi()?;
        if n == 0 {
            // SAFETY: a pointer to a live g16_msm_tuning, read only.
            unsafe { ffi::check_msm_tuning(&tuning) }?;
            return Ok((G::Curve::identity(), MsmTiming::default()));
        }
        // `out` has out.len() words; the C++ side writes at most that many.
        let mut out = vec![0u64; MAX_WINDOWS * G::JACOBIAN_WORDS];
        let mut report = g16_msm_report::default();
        let window_bits = call(out.as_mut_ptr(), out.len(), &tuning, &mut report)?;
        let timing = MsmTiming {
            device_ms: report.device_ms,
            window_bits,
            run: MsmRun::from(&report),
        };
        Ok((combine_windows::<G>(&out, window_bits), timing))
    }

    /// Σ `scalars[i]` · `bases[i]` over the first `n` scalars of a buffer that
    /// already lies on the device (the H polynomial's result).
    pub fn msm_device_scalars(
        &self,
        guard: &DeviceGuard<'_>,
        scalars: &DeviceScalars,
        n: usize,
    ) -> Result<(G::Curve, MsmTiming), GpuError> {
        self.msm_device_range(guard, 0, scalars, 0, n, self.tuning())
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
        self.msm_device_range(guard, 0, scalars, scalar_first, n, self.tuning())
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
        tuning: &MsmTuning,
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
        self.run_windows(n, tuning, |out, out_words, tuning, report| unsafe {
            ffi::msm_windows_resident(
                guard.ffi_device(),
                self.bases(),
                first,
                scalars.inner(),
                scalar_first,
                n,
                out,
                out_words,
                tuning,
                report,
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
            ..MsmTiming::default()
        };
        Ok((G::from_jacobian_words(&out), timing))
    }
}
