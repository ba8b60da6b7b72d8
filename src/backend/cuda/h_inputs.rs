//! The H polynomial computed on a device: a proof's a, b, c evaluations go
//! up once (staged a piece at a time) and the H MSM reads the result where
//! it lies.

use std::time::{Duration, Instant};

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::curve::as_words;
use super::device_scalars::{after_uploads, DeviceScalars, PinnedStaging, ScalarUploader};
use crate::backend::cpu::Domain;
use crate::bridge::ffi;
use crate::device::{DeviceGuard, GpuError};
use crate::host_pools::parallel_copy;

/// How [`HInputs::upload_staged_as`] stages a, b, c through pinned memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HStaging {
    /// a, then b, then c, each sent on to the coset on the device as soon
    /// as its last piece has landed, while the host stages the next: the
    /// default.
    #[default]
    Polynomials,
    /// Rows of the three together, transformed in [`HInputs::compute`]
    /// once all have landed (the way before, for comparisons).
    Rows,
}

/// A proof's a, b, c evaluations on one device, zero-padded to the domain:
/// the input of the H polynomial.
pub struct HInputs {
    /// Where a, b, c went to the coset as each landed (all three), the
    /// work that did it. The first field, so it is dropped first: its drop
    /// waits for the transforms it queued on a, b, c.
    on_coset: Option<cxx::UniquePtr<ffi::HPolynomial>>,
    a: DeviceScalars,
    b: DeviceScalars,
    c: DeviceScalars,
}

// SAFETY: the H polynomial's work is used only through a DeviceGuard of its
// device, and its destructor selects that device itself; the rest is Send.
unsafe impl Send for HInputs {}

impl HInputs {
    /// a, b, c already on one device, each of the domain's size.
    pub(super) fn from_device(a: DeviceScalars, b: DeviceScalars, c: DeviceScalars) -> Self {
        Self {
            on_coset: None,
            a,
            b,
            c,
        }
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
        check_lengths(m, a, b, c)?;
        Ok(Self::from_device(
            DeviceScalars::upload(guard, a, m)?,
            DeviceScalars::upload(guard, b, m)?,
            DeviceScalars::upload(guard, c, m)?,
        ))
    }

    /// [`upload`](Self::upload) through `uploader`'s two pinned slots, at
    /// the bus's speed without a pinned buffer of all three (a streamed
    /// proof has no key holding one).
    pub fn upload_through(
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        [a, b, c]: [&[Scalar]; 3],
        uploader: &mut ScalarUploader,
    ) -> Result<Self, GpuError> {
        let m = domain.size();
        check_lengths(m, a, b, c)?;
        Ok(Self::from_device(
            uploader.upload(guard, a, m)?,
            uploader.upload(guard, b, m)?,
            uploader.upload(guard, c, m)?,
        ))
    }

    /// [`upload`](Self::upload) through `staging` (at least 3 n scalars):
    /// a, then b, then c copied there piece by piece over the cores, each
    /// piece sent on an upload stream as soon as it is staged, and each
    /// polynomial sent on to the coset on the device as soon as its last
    /// piece has landed, while the host stages the next: the H lane's
    /// transforms no longer wait for the host's copy of all three (~0.15 s
    /// at 2^24) ([`HStaging::Polynomials`]; see
    /// [`upload_staged_as`](Self::upload_staged_as) for the other way).
    /// Falls back to the plain upload when `staging` is too small.
    pub fn upload_staged(
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        staging: &mut PinnedStaging,
    ) -> Result<Self, GpuError> {
        Self::upload_staged_as(guard, domain, [a, b, c], staging, HStaging::default())
    }

    /// [`upload_staged`](Self::upload_staged) the way `how` says:
    /// [`HStaging::Rows`] stages rows of the three together and transforms
    /// them in [`compute`](Self::compute), for comparisons.
    pub fn upload_staged_as(
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        [a, b, c]: [&[Scalar]; 3],
        staging: &mut PinnedStaging,
        how: HStaging,
    ) -> Result<Self, GpuError> {
        let n = a.len();
        if b.len() != n || c.len() != n || n > domain.size() || staging.len() < 3 * n {
            return Self::upload(guard, domain, a, b, c);
        }
        if n == 0 || how == HStaging::Rows {
            return Self::upload_filled(guard, domain, n, staging, |first, staged| {
                for (to, from) in staged.into_iter().zip([a, b, c]) {
                    parallel_copy(to, &from[first..first + to.len()]);
                }
                Ok::<(), GpuError>(())
            });
        }
        let m = domain.size();
        let targets = [
            DeviceScalars::upload(guard, &[], m)?,
            DeviceScalars::upload(guard, &[], m)?,
            DeviceScalars::upload(guard, &[], m)?,
        ];
        // Made after the targets, so dropped before them on every path.
        let work = new_work(guard, domain)?;
        let (staged, stream) = staging.slice_and_stream(guard)?;
        // Every copy has landed (or stopped) before the targets can drop.
        after_uploads(
            stream,
            queue_polynomials(guard, [a, b, c], staged, stream, &targets, &work),
        )?;
        let [a, b, c] = targets;
        Ok(Self {
            on_coset: Some(work),
            a,
            b,
            c,
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
        // Every copy has landed (or stopped) before the targets can drop.
        after_uploads(
            stream,
            queue_pieces(guard, n, staged, stream, &targets, fill),
        )?;
        let [a, b, c] = targets;
        Ok(Self::from_device(a, b, c))
    }

    /// The coefficients of (A B - C) / Z, left on the device (m scalars, the
    /// last one zero; the H MSM reads the first m - 1), with the device time
    /// in milliseconds (from the start of the H polynomial's work, which a
    /// staged upload began). `domain` must be the one the inputs were
    /// uploaded for.
    pub fn compute(
        mut self,
        guard: &DeviceGuard<'_>,
        domain: &Domain,
    ) -> Result<(DeviceScalars, f32), GpuError> {
        let work = match self.on_coset.take() {
            Some(work) => work,
            None => {
                let work = new_work(guard, domain)?;
                for values in [&self.a, &self.b, &self.c] {
                    ffi::h_to_coset(guard.ffi_device(), &work, values.inner())?;
                }
                work
            }
        };
        let mut device_ms = 0f32;
        // SAFETY: `device_ms` is a valid f32; the C++ side checks the three
        // buffers' device and lengths, and that each is on the coset.
        unsafe {
            ffi::h_quotient(
                guard.ffi_device(),
                &work,
                self.a.inner(),
                self.b.inner(),
                self.c.inner(),
                &mut device_ms,
            )
        }?;
        drop(work);
        Ok((self.a, device_ms))
    }
}

/// a, b, c of one length, no longer than the domain's `m`.
fn check_lengths(m: usize, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Result<(), GpuError> {
    if a.len() != b.len() || a.len() != c.len() || a.len() > m {
        return Err(GpuError::Native(format!(
            "H polynomial of {}, {} and {} evaluations over a domain of {m}",
            a.len(),
            b.len(),
            c.len()
        )));
    }
    Ok(())
}

/// The H polynomial's work over `domain` on the guard's device: its
/// twiddles start at once, on a stream of its own.
fn new_work(
    guard: &DeviceGuard<'_>,
    domain: &Domain,
) -> Result<cxx::UniquePtr<ffi::HPolynomial>, GpuError> {
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let constants = [
        domain.omega(),
        domain.omega_inverse(),
        domain.size_inverse(),
        g,
        g.invert().unwrap(),
        domain.vanishing_on_coset().invert().unwrap(),
    ];
    // SAFETY: `constants` is the six scalars new_h_polynomial reads.
    Ok(unsafe { ffi::new_h_polynomial(guard.ffi_device(), domain.size(), as_words(&constants)) }?)
}

/// Stages a, b and c (each n long, `staged` at least 3 n) one after the
/// other, a piece at a time, queueing each piece's copy into its target
/// on `stream` as soon as it is staged and each polynomial's way to the
/// coset on `work` once its copies are queued; the caller waits for the
/// stream.
fn queue_polynomials(
    guard: &DeviceGuard<'_>,
    sources: [&[Scalar]; 3],
    staged: &mut [Scalar],
    stream: &ffi::UploadStream,
    targets: &[DeviceScalars; 3],
    work: &ffi::HPolynomial,
) -> Result<(), GpuError> {
    let n = sources[0].len();
    let piece = ScalarUploader::PIECE;
    let began = Instant::now();
    let mut staged_at = [Duration::ZERO; 3];
    for (slot, ((region, from), to)) in staged[..3 * n]
        .chunks_mut(n)
        .zip(sources)
        .zip(targets)
        .enumerate()
    {
        for (k, (staged, from)) in region.chunks_mut(piece).zip(from.chunks(piece)).enumerate() {
            parallel_copy(staged, from);
            queue_piece(guard, stream, slot, staged, to, k * piece)?;
        }
        ffi::h_to_coset_after_uploads(guard.ffi_device(), work, stream, to.inner())?;
        staged_at[slot] = began.elapsed();
    }
    log::debug!(
        "a, b, c staged one after another: {n} rows each, queued for the coset {:.3}, {:.3}, {:.3} s in",
        staged_at[0].as_secs_f64(),
        staged_at[1].as_secs_f64(),
        staged_at[2].as_secs_f64()
    );
    Ok(())
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
            queue_piece(guard, stream, slot, staged, to, k * piece)?;
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

/// Queues the copy of `staged` (one of a, b, c's pieces in pinned memory)
/// into `to` at `offset` on `stream`, on slot `slot % 2`.
fn queue_piece(
    guard: &DeviceGuard<'_>,
    stream: &ffi::UploadStream,
    slot: usize,
    staged: &[Scalar],
    to: &DeviceScalars,
    offset: usize,
) -> Result<(), GpuError> {
    // SAFETY: `staged` is pinned memory of staged.len() scalars, a region no
    // other piece uses, untouched until the caller has waited for the
    // stream; the C++ side checks the device and the range of `to`.
    unsafe {
        ffi::queue_upload(
            guard.ffi_device(),
            stream,
            slot % 2,
            staged.as_ptr().cast::<u64>(),
            staged.len(),
            to.inner(),
            offset,
        )
    }?;
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
