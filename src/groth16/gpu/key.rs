//! A proving key resident on one device: uploaded once, shared by every
//! proof started there, freed (on that device) when the last handle drops.

use std::sync::Arc;

use super::copies::{add_shifted_copies, ShiftedCopies};
use super::resident_key::{ensure_free_memory, points_bytes, proof_working_bytes, ResidentKey};
use super::tuning::ProverTuning;
use crate::device::DeviceGuard;
use crate::groth16::prover::{check_delta, KeySizes};
use crate::params::{ProvingKey, VerifyingKey};
use crate::Error;

/// A proving key held in one device's memory. Cloning shares it; the device
/// memory is freed when the last clone (and the last proof using it) drops.
#[derive(Clone)]
pub struct GpuProvingKey {
    pub(super) inner: Arc<ResidentKey>,
}

impl GpuProvingKey {
    /// Device bytes the key's points take (without a proof's working memory).
    pub fn points_bytes(key: &ProvingKey) -> u64 {
        points_bytes(&KeySizes::of(key))
    }

    /// Device bytes needed to hold `key` and run one proof with it.
    pub fn required_bytes(key: &ProvingKey) -> u64 {
        Self::points_bytes(key) + proof_working_bytes(&KeySizes::of(key))
    }

    /// Copies `key`'s points to the guard's device, with shifted copies of
    /// its base sets where they fit ([`ShiftedCopies::WhereTheyFit`]). A key
    /// that cannot fit together with one proof's working memory is refused
    /// before anything is allocated ([`GpuError::OutOfMemory`](crate::device::GpuError::OutOfMemory)).
    pub fn upload(guard: &DeviceGuard<'_>, key: &ProvingKey) -> Result<Self, Error> {
        Self::upload_with(guard, key, ShiftedCopies::WhereTheyFit)
    }

    /// [`upload`](Self::upload), with shifted copies as `copies` says.
    pub fn upload_with(
        guard: &DeviceGuard<'_>,
        key: &ProvingKey,
        copies: ShiftedCopies,
    ) -> Result<Self, Error> {
        Self::upload_tuned(guard, key, copies, &ProverTuning::default())
    }

    /// [`upload_with`](Self::upload_with), the key's proofs then running as
    /// `tuning` says (its MSMs, a, b, c's staging, its shifted copies' bits
    /// and share); another key of the same parameters may run with
    /// another tuning beside it.
    pub fn upload_tuned(
        guard: &DeviceGuard<'_>,
        key: &ProvingKey,
        copies: ShiftedCopies,
        tuning: &ProverTuning,
    ) -> Result<Self, Error> {
        // A tuning out of range is refused before anything is allocated.
        tuning.msm.check()?;
        check_delta(&key.vk)?;
        let device = guard.device();
        let needed = Self::required_bytes(key);
        let what = "the proving key and one proof";
        ensure_free_memory(device, what, needed)?;
        log::debug!(
            "uploading a proving key of {} MiB to device {}",
            Self::points_bytes(key) >> 20,
            device.ordinal()
        );
        let mut inner = ResidentKey::upload(guard, key, tuning)?;
        add_shifted_copies(guard, &mut inner, copies, tuning);
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The CUDA ordinal of the device that holds the key.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// How the key's proofs run ([`upload_tuned`](Self::upload_tuned)).
    pub fn tuning(&self) -> &ProverTuning {
        &self.inner.tuning
    }

    /// The verifying key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.inner.vk
    }

    /// Device bytes the resident points and their shifted copies take.
    pub fn device_bytes(&self) -> u64 {
        let key = &self.inner;
        key.h.device_bytes()
            + key.l.device_bytes()
            + key.a.device_bytes()
            + key.b_g1.device_bytes()
            + key.b_g2.device_bytes()
    }
}

impl std::fmt::Debug for GpuProvingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuProvingKey")
            .field("ordinal", &self.inner.ordinal)
            .field("sizes", &self.inner.sizes)
            .finish()
    }
}
