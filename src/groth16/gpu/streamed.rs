//! Proofs with a key too large for the device's memory (a 32 GiB sector's
//! PoRep key on a 24 GiB card, a 64 GiB sector's on an 80 GiB one): the key
//! stays on the host, and each MSM sends its points across the bus a chunk
//! at a time, the next chunk's copy running while the device sums the
//! current one. Every proof moves the whole key (seconds at 2^27 over
//! PCIe), so a resident key is much faster; the CPU prover is slower still.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, Scalar};
use parking_lot::Mutex;

use super::chunked::{chunked_sum, streamed_sums};
use super::resident_key::{ensure_free_memory, h_polynomial_bytes};
use super::tuning::ProverTuning;
use crate::backend::cpu::{compute_h, Domain};
use crate::backend::cuda::{
    DeviceScalars, GpuCurve, HInputs, PointStaging, ResidentBases, ScalarUploader,
};
use crate::device::{Device, DeviceGuard, GpuError};
use crate::groth16::prover::{assemble, check_delta, check_key_fits, KeySizes};
use crate::groth16::Proof;
use crate::params::ProvingKey;
use crate::synthesis::Assignment;
use crate::Error;

/// Device memory left aside beside the chunks: the MSM's scalars and
/// scratch for one chunk, CUDA's own allocations.
const RESERVE_BYTES: u64 = 768 << 20;
/// Page-locked host memory that stages one chunk: 2.8M G2 points, 5.6M G1.
const STAGING_BYTES: usize = 512 << 20;
/// The fewest chunks a query is cut into, so that its uploads run beside
/// its sums.
const FEWEST_CHUNKS: usize = 4;
/// The fewest points of a chunk: below this the MSM's fixed costs dominate;
/// where even these do not fit, the upload's out-of-memory error says so.
const FEWEST_CHUNK_POINTS: usize = 1 << 12;

/// Staging buffers not in use, kept for the next streamed proofs.
static STAGING: Mutex<Vec<PointStaging>> = Mutex::new(Vec::new());
/// Scalar uploaders (a, b, c's way to the device) not in use, each bound to
/// its device, kept for the next streamed proofs.
static UPLOADERS: Mutex<Vec<ScalarUploader>> = Mutex::new(Vec::new());

/// Points in one chunk of a query of `len` points of `point_bytes` each,
/// given `free` device bytes and `staged` points of room in the staging
/// buffer: three chunks live at once (one summed, one waiting, one crossing
/// the bus) beside [`RESERVE_BYTES`] and a quarter of what is left for the
/// MSM's own working memory; at least [`FEWEST_CHUNKS`] a query.
fn chunk_points(free: u64, point_bytes: u64, len: usize, staged: usize) -> usize {
    let for_chunks = free.saturating_sub(RESERVE_BYTES) / 4;
    let fitting = usize::try_from(for_chunks / point_bytes.max(1)).unwrap_or(usize::MAX);
    fitting
        .min(staged)
        .min(len.div_ceil(FEWEST_CHUNKS))
        .max(FEWEST_CHUNK_POINTS)
}

/// Proves `assignment` with `key` on the guard's device without making the
/// key resident: the H polynomial on the device where its four domains fit
/// (else on the CPU), then each MSM a chunk of points at a time, the H
/// query's first, reading h where it lies. The same proof as
/// [`prove`](crate::groth16::prove) and [`start_proof`](super::start_proof).
/// A key that does not fit the circuit is an error before any work; too
/// little free device memory for even small chunks is
/// [`GpuError::OutOfMemory`], the device still usable.
pub fn prove_streamed(
    guard: &DeviceGuard<'_>,
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, Error> {
    prove_streamed_tuned(guard, key, assignment, r, s, &ProverTuning::default())
}

/// [`prove_streamed`] run as `tuning` says: its MSMs by `tuning.msm`, its
/// queries cut and their scalars placed by
/// [`stream_chunk_points`](ProverTuning::stream_chunk_points) and
/// [`stream_scalars_from_host`](ProverTuning::stream_scalars_from_host).
/// The same proof under every tuning.
pub fn prove_streamed_tuned(
    guard: &DeviceGuard<'_>,
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
    tuning: &ProverTuning,
) -> Result<Proof, Error> {
    tuning.msm.check()?;
    check_key_fits(key, assignment)?;
    check_delta(&key.vk)?;
    let started = Instant::now();
    let domain = Domain::new(assignment.num_constraints())?;
    let mut uploader = take_uploader(guard);
    let h = h_coefficients(
        guard,
        &domain,
        &KeySizes::of(key),
        assignment,
        &mut uploader,
    )?;
    let h_done = started.elapsed();
    let streamer = Streamer {
        guard,
        uploads: Mutex::new(guard.device().duplicate()?),
        staging: Mutex::new(
            STAGING
                .lock()
                .pop()
                .unwrap_or_else(|| PointStaging::new(guard, STAGING_BYTES)),
        ),
        uploader: Mutex::new(uploader),
        tuning,
    };
    let on = &streamer;
    // h is dropped once its query is summed: the device's memory goes to
    // the other queries' chunks.
    let h_sum = move |bases: &[G1Affine]| match h {
        HCoefficients::OnDevice(h) => on.sum(bases, QueryScalars::OnDevice(&h)),
        HCoefficients::OnHost(h) => on.sum(bases, QueryScalars::OnHost(&h)),
    };
    let sums = streamed_sums(
        key,
        assignment,
        h_sum,
        &|bases, scalars| on.sum(bases, QueryScalars::OnHost(scalars)),
        &|bases, scalars| on.sum(bases, QueryScalars::OnHost(scalars)),
    );
    streamer.keep_buffers();
    let sums = sums?;
    log::debug!(
        "streamed proof on GPU {}: H polynomial {:.3} s, MSMs {:.3} s",
        guard.device().ordinal(),
        h_done.as_secs_f64(),
        (started.elapsed() - h_done).as_secs_f64()
    );
    Ok(assemble(&key.vk, &sums, r, s))
}

/// What a streamed proof's MSMs share: its device, a second handle to it
/// for the chunks' uploads, the point staging, the scalar uploader and the
/// proof's tuning.
struct Streamer<'g, 'd> {
    guard: &'g DeviceGuard<'d>,
    uploads: Mutex<Device>,
    staging: Mutex<PointStaging>,
    uploader: Mutex<Option<ScalarUploader>>,
    tuning: &'g ProverTuning,
}

impl Streamer<'_, '_> {
    /// Σ scalars·bases over one query, a chunk at a time ([`device_msm`]).
    fn sum<G: GpuCurve>(&self, bases: &[G], scalars: QueryScalars<'_>) -> Result<G::Curve, Error>
    where
        G::Curve: Send + Sync,
    {
        let (staging, uploader) = (&mut self.staging.lock(), &mut self.uploader.lock());
        let tuning = self.tuning;
        device_msm(
            self.guard,
            &self.uploads,
            staging,
            uploader,
            bases,
            scalars,
            tuning,
        )
    }

    /// Hands the staging buffer and the uploader back for the next streamed
    /// proofs.
    fn keep_buffers(self) {
        STAGING.lock().push(self.staging.into_inner());
        UPLOADERS.lock().extend(self.uploader.into_inner());
    }
}

/// H's coefficients, the H MSM's scalars: left on the device that computed
/// them, or on the host where the device had no room.
enum HCoefficients {
    OnDevice(DeviceScalars),
    OnHost(Vec<Scalar>),
}

/// A scalar uploader for the guard's device: one kept from an earlier
/// streamed proof, else a new one; None where the system refuses its
/// pinned memory (the scalars then go by the driver's copies, slower).
fn take_uploader(guard: &DeviceGuard<'_>) -> Option<ScalarUploader> {
    let ordinal = guard.device().ordinal();
    let kept = {
        let mut kept = UPLOADERS.lock();
        let mine = kept.iter().position(|u| u.ordinal() == ordinal);
        mine.map(|at| kept.swap_remove(at))
    };
    kept.or_else(|| {
        ScalarUploader::new(guard)
            .map_err(|error| log::warn!("streamed proofs without pinned scalar slots: {error}"))
            .ok()
    })
}

/// H's coefficients: computed on the device where a, b, c and the twiddles
/// fit beside a chunk's room (a, b, c sent through `uploader`'s pinned
/// slots where there is one, h left there), else on the CPU.
fn h_coefficients(
    guard: &DeviceGuard<'_>,
    domain: &Domain,
    sizes: &KeySizes,
    assignment: &Assignment,
    uploader: &mut Option<ScalarUploader>,
) -> Result<HCoefficients, Error> {
    let (a, b, c) = (&assignment.a, &assignment.b, &assignment.c);
    let needed = h_polynomial_bytes(sizes) + RESERVE_BYTES;
    if let Err(error) = ensure_free_memory(guard.device(), "the H polynomial", needed) {
        log::debug!("{error}; the H polynomial on the CPU");
        return Ok(HCoefficients::OnHost(compute_h(domain, a, b, c)));
    }
    let inputs = match uploader {
        Some(uploader) => HInputs::upload_through(guard, domain, [a, b, c], uploader)?,
        None => HInputs::upload(guard, domain, a, b, c)?,
    };
    let (h, _) = inputs.compute(guard, domain)?;
    Ok(HCoefficients::OnDevice(h))
}

/// Where a streamed query's scalars lie: on the host (each chunk's share
/// copied by the driver), or on the device (the H polynomial's, or a
/// query's sent up once), each chunk reading its share where it lies.
#[derive(Clone, Copy)]
enum QueryScalars<'a> {
    OnHost(&'a [Scalar]),
    OnDevice(&'a DeviceScalars),
}

/// Σ scalars·bases on the guard's device, a chunk at a time: each chunk
/// copied into `staging` and uploaded from there through `uploads` (a
/// second handle to the device, so the copy runs beside the sum) while the
/// chunk before it is summed, as `tuning` says. Scalars on the host must
/// match the bases in number, and go up first through `uploader` where
/// they fit; scalars on the device may run past them (the H polynomial's
/// last, zero, coefficient).
fn device_msm<G: GpuCurve>(
    guard: &DeviceGuard<'_>,
    uploads: &Mutex<Device>,
    staging: &mut PointStaging,
    uploader: &mut Option<ScalarUploader>,
    bases: &[G],
    scalars: QueryScalars<'_>,
    tuning: &ProverTuning,
) -> Result<G::Curve, Error>
where
    G::Curve: Send + Sync,
{
    let (scalar_count, enough) = match scalars {
        QueryScalars::OnHost(values) => (values.len(), values.len() == bases.len()),
        QueryScalars::OnDevice(values) => (values.len(), values.len() >= bases.len()),
    };
    if !enough {
        return Err(Error::LengthMismatch {
            bases: bases.len(),
            scalars: scalar_count,
        });
    }
    let sent;
    let scalars = match scalars {
        QueryScalars::OnHost(values) => match send_scalars(guard, uploader, values, tuning)? {
            Some(on_device) => {
                sent = on_device;
                QueryScalars::OnDevice(&sent)
            }
            None => scalars,
        },
        on_device => on_device,
    };
    let room = staging.points::<G>();
    let chunk = match tuning.stream_chunk_points {
        None => {
            let free = guard.device().free_memory()?;
            chunk_points(free, std::mem::size_of::<G>() as u64, bases.len(), room)
        }
        Some(forced) => forced.min(room),
    };
    // Where the time goes, for the debug log: the bus has been measured at
    // a fifth of what page-locked copies reach, and these say which side
    // holds it up.
    let (mut staging_time, mut upload_time, mut sum_time) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let started = Instant::now();
    let total = chunked_sum(
        bases,
        chunk,
        |part, spare: Option<ResidentBases<G>>| {
            let uploads = uploads.lock();
            let uploads = DeviceGuard::lane(&uploads);
            let copy_started = Instant::now();
            let staged = staging.stage(part);
            let upload_started = Instant::now();
            staging_time += upload_started - copy_started;
            let resident = match spare {
                Some(mut resident) => resident.refill(&uploads, staged).map(|()| resident),
                None => ResidentBases::upload(&uploads, staged)
                    .map(|resident| resident.with_tuning(tuning.msm)),
            };
            upload_time += upload_started.elapsed();
            Ok(resident?)
        },
        |resident, range| {
            let sum_started = Instant::now();
            let sum = match scalars {
                QueryScalars::OnHost(values) => resident.msm_range_direct(guard, 0, &values[range]),
                QueryScalars::OnDevice(values) => {
                    resident.msm_device_scalars_from(guard, values, range.start, range.len())
                }
            };
            sum_time += sum_started.elapsed();
            Ok(sum?)
        },
    );
    log::debug!(
        "streamed MSM of {} points on GPU {} in chunks of {chunk}, scalars {}: {:.3} s, the uploader {:.3} s staging and {:.3} s uploading, the sums {:.3} s",
        bases.len(),
        guard.device().ordinal(),
        match scalars {
            QueryScalars::OnHost(_) => "from the host",
            QueryScalars::OnDevice(_) => "on the device",
        },
        started.elapsed().as_secs_f64(),
        staging_time.as_secs_f64(),
        upload_time.as_secs_f64(),
        sum_time.as_secs_f64(),
    );
    total
}

/// A query's host scalars sent to the guard's device through `uploader`'s
/// pinned slots, where they take at most a quarter of its free memory
/// (None where they would take more, the device refuses them, there is no
/// uploader or `tuning` keeps them on the host): the chunks then read
/// their shares there, where each share's copy through the driver from
/// pageable memory cost ~6 ms a chunk of 2^20 (H100).
fn send_scalars(
    guard: &DeviceGuard<'_>,
    uploader: &mut Option<ScalarUploader>,
    values: &[Scalar],
    tuning: &ProverTuning,
) -> Result<Option<DeviceScalars>, GpuError> {
    let Some(uploader) = uploader else {
        return Ok(None);
    };
    let bytes = std::mem::size_of_val(values) as u64;
    if values.is_empty()
        || tuning.stream_scalars_from_host
        || bytes > guard.device().free_memory()? / 4
    {
        return Ok(None);
    }
    match uploader.upload(guard, values, values.len()) {
        Ok(sent) => Ok(Some(sent)),
        Err(error) if error.is_out_of_memory() => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fill_a_quarter_of_what_is_free_within_bounds() {
        let (len, room) = (1 << 30, 1 << 30);
        let free = RESERVE_BYTES + (4 << 30);
        assert_eq!(chunk_points(free, 96, len, room), (1 << 30) / 96);
        // Never fewer than FEWEST_CHUNK_POINTS, never more than the
        // staging holds, at least FEWEST_CHUNKS a query.
        assert_eq!(chunk_points(0, 96, len, room), FEWEST_CHUNK_POINTS);
        assert_eq!(chunk_points(u64::MAX, 192, len, 5000), 5000);
        assert_eq!(chunk_points(u64::MAX, 192, 1 << 22, room), 1 << 20);
        assert_eq!(chunk_points(u64::MAX, 192, 1000, room), FEWEST_CHUNK_POINTS);
    }
}
