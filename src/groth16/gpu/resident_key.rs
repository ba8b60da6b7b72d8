//! What a resident proving key holds on its device and beside it (its
//! points, pinned staging, the last shape's matrices), how much device
//! memory a key and a proof take, and how a proof's inputs go up.

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G2Affine};

use parking_lot::Mutex;

use super::division::MeasuredRate;
use super::input::ProofInput;
use super::split::ScalarBuffers;
use super::tuning::ProverTuning;
use crate::backend::cpu::Domain;
use crate::backend::cuda::{
    is_pinned, DeviceScalars, DeviceShape, HInputs, MatrixParts, PinnedStaging, ResidentBases,
    SharedUploader,
};
use crate::device::{Device, DeviceGuard, GpuError};
use crate::groth16::prover::KeySizes;
use crate::params::{ProvingKey, VerifyingKey};
use crate::synthesis::{CircuitShape, WitnessValues};
use crate::Error;

/// Device memory a proof needs besides its key: the H polynomial's a, b, c
/// and two twiddle tables over the domain (m = h + 1 scalars of 32 bytes
/// each, 4 m in all), plus room for the MSM's scratch (it works in chunks,
/// so this is a floor, not the whole).
pub(super) fn proof_working_bytes(sizes: &KeySizes) -> u64 {
    const MSM_SCRATCH_FLOOR: u64 = 256 << 20;
    h_polynomial_bytes(sizes) + MSM_SCRATCH_FLOOR
}

/// Device bytes of the H polynomial's a, b, c and twiddle tables: four
/// domains (m = h + 1) of 32-byte scalars.
pub(super) fn h_polynomial_bytes(sizes: &KeySizes) -> u64 {
    4 * (sizes.h + 1) as u64 * 32
}

/// Device bytes of a key's affine points: 96 per G1 point, 192 per G2.
pub(super) fn points_bytes(sizes: &KeySizes) -> u64 {
    let g1 = (sizes.h + sizes.l + sizes.a + sizes.b_g1) as u64;
    g1 * 96 + sizes.b_g2 as u64 * 192
}

/// Err([`GpuError::OutOfMemory`]) unless `device` has `needed` bytes free.
pub(super) fn ensure_free_memory(device: &Device, what: &str, needed: u64) -> Result<(), GpuError> {
    let free = device.free_memory()?;
    if needed > free {
        return Err(GpuError::OutOfMemory {
            what: what.into(),
            needed,
            free,
            ordinal: device.ordinal(),
        });
    }
    Ok(())
}

/// The key's queries on the device, and what the host side keeps.
pub(super) struct ResidentKey {
    pub vk: VerifyingKey,
    pub sizes: KeySizes,
    pub ordinal: usize,
    pub h: ResidentBases<G1Affine>,
    pub l: ResidentBases<G1Affine>,
    pub a: ResidentBases<G1Affine>,
    pub b_g1: ResidentBases<G1Affine>,
    pub b_g2: ResidentBases<G2Affine>,
    /// Pinned host memory for a proof's a, b, c, allocated with the key
    /// (so the first proof does not pay for locking it) and reused by every
    /// proof (None: pinning was refused).
    staging: Mutex<Option<PinnedStaging>>,
    /// Host vectors for a proof's l, a and b scalars, reused across proofs.
    pub scalar_buffers: Arc<ScalarBuffers>,
    /// The A, B, C of the last shape proved with this key, on its device,
    /// by the shape's identity; None until a shaped proof uploads them, or
    /// where they did not fit.
    device_shape: Mutex<Option<(u64, Arc<DeviceShape>)>>,
    /// Pinned slots a witness goes up through when A, B, C are evaluated
    /// on the device.
    witness_uploader: SharedUploader,
    /// How fast the devices worked on this key's last split proof.
    pub split_rate: MeasuredRate,
    /// How the key's proofs run (its base sets carry the MSM part).
    pub tuning: ProverTuning,
}

/// Room for the largest proof a key of these sizes serves: three domains of
/// scalars, pinned; None (with a warning) when the system refuses to lock it.
fn pinned_staging(sizes: &KeySizes) -> Option<PinnedStaging> {
    PinnedStaging::new(3 * (sizes.h + 1))
        .map_err(|error| {
            log::warn!("no pinned staging buffer ({error}); uploading from pageable memory")
        })
        .ok()
}

impl ResidentKey {
    /// `key`'s points on the guard's device, its proofs to run as `tuning`
    /// says (no shifted copies yet).
    pub fn upload(
        guard: &DeviceGuard<'_>,
        key: &ProvingKey,
        tuning: &ProverTuning,
    ) -> Result<Self, Error> {
        let sizes = KeySizes::of(key);
        Ok(ResidentKey {
            vk: key.vk.clone(),
            staging: Mutex::new(pinned_staging(&sizes)),
            scalar_buffers: Arc::new(ScalarBuffers::pinned(guard, sizes.ic + sizes.l)),
            device_shape: Mutex::new(None),
            witness_uploader: SharedUploader::default(),
            split_rate: MeasuredRate::default(),
            tuning: *tuning,
            sizes,
            ordinal: guard.device().ordinal(),
            h: ResidentBases::upload(guard, &key.h)?.with_tuning(tuning.msm),
            l: ResidentBases::upload(guard, &key.l)?.with_tuning(tuning.msm),
            a: ResidentBases::upload(guard, &key.a)?.with_tuning(tuning.msm),
            b_g1: ResidentBases::upload(guard, &key.b_g1)?.with_tuning(tuning.msm),
            b_g2: ResidentBases::upload(guard, &key.b_g2)?.with_tuning(tuning.msm),
        })
    }

    /// Uploads a proof's a, b, c to the key's device through the key's
    /// pinned staging buffer (ordinary memory if pinning was refused). A
    /// shaped input's are evaluated on the device from its witness where
    /// the shape's matrices fit there, else on the way up, checked row by
    /// row either way.
    pub fn upload_inputs(
        &self,
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        input: ProofInput<'_>,
    ) -> Result<HInputs, Error> {
        if let ProofInput::Shaped { shape, witness } = input {
            if let Some(on_device) = self.shape_on_device(guard, shape) {
                return self.evaluate_on_device(guard, domain, &on_device, witness);
            }
        }
        let mut staging = self.staging.lock();
        match (input, staging.as_mut()) {
            (ProofInput::Evaluated(assignment), Some(buffer)) => {
                let abc = [&assignment.a[..], &assignment.b[..], &assignment.c[..]];
                let how = self.tuning.h_staging;
                Ok(HInputs::upload_staged_as(guard, domain, abc, buffer, how)?)
            }
            (ProofInput::Evaluated(assignment), None) => {
                let (a, b, c) = (&assignment.a, &assignment.b, &assignment.c);
                Ok(HInputs::upload(guard, domain, a, b, c)?)
            }
            // Each piece of rows is evaluated into the pinned buffer and
            // sent while the next is evaluated.
            (ProofInput::Shaped { shape, witness }, Some(buffer))
                if buffer.len() >= 3 * shape.num_constraints() =>
            {
                HInputs::upload_filled(
                    guard,
                    domain,
                    shape.num_constraints(),
                    buffer,
                    |first, rows| shape.evaluate_rows_into(first, witness.input, witness.aux, rows),
                )
            }
            (ProofInput::Shaped { shape, witness }, _) => {
                drop(staging);
                let (a, b, c) = shape.evaluate_checked(witness.input, witness.aux)?;
                Ok(HInputs::upload(guard, domain, &a, &b, &c)?)
            }
        }
    }

    /// `shape`'s A, B, C on the key's device: the kept copy, or one
    /// uploaded now in place of the last shape's. None where they do not
    /// fit beside a proof's working memory (the host evaluates the rows
    /// instead).
    fn shape_on_device(
        &self,
        guard: &DeviceGuard<'_>,
        shape: &CircuitShape,
    ) -> Option<Arc<DeviceShape>> {
        let mut kept = self.device_shape.lock();
        if let Some((identity, on_device)) = kept.as_ref() {
            if *identity == shape.identity() {
                return Some(on_device.clone());
            }
        }
        *kept = None;
        let needed = shape_device_bytes(shape) + proof_working_bytes(&self.sizes);
        if let Err(error) = ensure_free_memory(guard.device(), "a shape's matrices", needed) {
            log::debug!("evaluating A, B, C on the host: {error}");
            return None;
        }
        let parts = shape
            .matrices()
            .map(|matrix| MatrixParts::from(matrix.raw_parts()));
        match DeviceShape::upload(guard, shape.num_inputs(), shape.num_aux(), parts) {
            Ok(on_device) => {
                log::debug!(
                    "a shape's A, B, C resident on device {}: {} MiB",
                    on_device.ordinal(),
                    on_device.device_bytes() >> 20
                );
                let on_device = Arc::new(on_device);
                *kept = Some((shape.identity(), on_device.clone()));
                Some(on_device)
            }
            Err(error) => {
                log::warn!("evaluating A, B, C on the host: {error}");
                None
            }
        }
    }
}

/// Device bytes of a shape's matrices: 8 per row offset, 8 per entry, 32 per
/// constant.
fn shape_device_bytes(shape: &CircuitShape) -> u64 {
    shape
        .matrices()
        .iter()
        .map(|matrix| {
            let (row_starts, columns, _, constants) = matrix.raw_parts();
            8 * row_starts.len() as u64 + 8 * columns.len() as u64 + 32 * constants.len() as u64
        })
        .sum()
}

impl ResidentKey {
    /// A proof's a, b, c evaluated on the device from `witness`; a broken
    /// row is [`Error::Unsatisfied`]. Aux values in page-locked memory go
    /// up as they lie, on the copy engine. Others go through the key's
    /// pinned slots, filled by the upload threads (the driver's own staging
    /// copied a 2^27 partition's 3.5 GB on this thread at about 9 GB/s),
    /// or from where they lie where the slots are busy or refused. Beside a
    /// pipeline's synthesis the slots took about 1.1 s on an H100 host,
    /// against 0.12 s with the host idle: their copies need cores.
    fn evaluate_on_device(
        &self,
        guard: &DeviceGuard<'_>,
        domain: &Domain,
        on_device: &DeviceShape,
        witness: WitnessValues<'_>,
    ) -> Result<HInputs, Error> {
        let started = Instant::now();
        let input = DeviceScalars::upload(guard, witness.input, witness.input.len())?;
        let (staged, how) = if is_pinned(witness.aux) {
            (None, "page-locked")
        } else {
            match self.witness_uploader.try_upload(guard, witness.aux) {
                Some(aux) => (Some(aux), "pinned slots"),
                None => (None, "from pageable memory"),
            }
        };
        let aux = match staged {
            Some(aux) => aux,
            None => DeviceScalars::upload(guard, witness.aux, witness.aux.len())?,
        };
        let uploaded = started.elapsed();
        let evaluated = on_device
            .evaluate(guard, domain, &input, &aux)?
            .map_err(|constraint| Error::Unsatisfied { constraint });
        log::debug!(
            "witness of {} scalars uploaded in {:.3} s ({}), a, b, c evaluated by {:.3} s",
            witness.input.len() + witness.aux.len(),
            uploaded.as_secs_f64(),
            how,
            started.elapsed().as_secs_f64()
        );
        evaluated
    }
}
