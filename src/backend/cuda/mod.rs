//! The CUDA backend (feature `cuda`): BLS12-381 multi-scalar multiplication
//! and batch addition on the GPU, for G1 and G2.
//!
//! Every launch takes a [`DeviceGuard`](crate::device::DeviceGuard): work
//! runs on the guard's device only. Inputs are blstrs values as they lie in
//! memory (Montgomery form, blst layouts); nothing is converted on the host.
//!
//! Every MSM runs as an [`MsmTuning`] says: the bases' own
//! ([`ResidentBases::with_tuning`]), or one named for the call
//! ([`msm_g1_tuned`], [`ResidentBases::msm_range_tuned`]); the default is
//! the library's choice. Nothing here reads the environment.
//!
//! Scalar rule: a `Scalar` is read as its Montgomery limbs `x` and stands for
//! `x · 2^-256 mod r`, which is its value for every valid `Scalar`; the device
//! reduces fully, so no input can make it misbehave.
//!
//! ```no_run
//! use blstrs::{G1Affine, Scalar};
//! use group::prime::PrimeCurveAffine;
//! use groth16_gpu::backend::cuda::{msm_g1, ResidentBases};
//! use groth16_gpu::device::DeviceMutex;
//! # fn main() -> Result<(), groth16_gpu::device::GpuError> {
//! let device = DeviceMutex::get(0)?;
//! let guard = device.lock();
//! let bases = vec![G1Affine::generator(); 4];
//! let scalars = vec![Scalar::from(3u64); 4];
//! let sum = msm_g1(&guard, &bases, &scalars)?; // 12 · generator
//! // Bases that stay on the device across calls:
//! let resident = ResidentBases::upload(&guard, &bases)?;
//! assert_eq!(resident.msm(&guard, &scalars)?, sum);
//! # Ok(()) }
//! ```

mod curve;
mod device_scalars;
mod device_shape;
mod fixed_base;
mod h_inputs;
#[cfg(test)]
mod lane_tests;
mod msm;
mod ntt;
mod one_shot;
mod pinned_vec;
mod point_staging;
pub mod reference;
mod reservation;
mod resident;
mod tuning;

pub use curve::GpuCurve;
pub use device_scalars::{is_pinned, DeviceScalars, PinnedStaging, ScalarUploader, SharedUploader};
pub use device_shape::{
    reference_first_unsatisfied, reference_matrix_rows, DeviceShape, MatrixParts,
};
pub use fixed_base::{fixed_base_mul, fixed_base_windows};
pub use h_inputs::{h_polynomial, HInputs, HStaging};
pub use msm::MsmTiming;
pub use ntt::{ntt, NttKind};
pub use one_shot::{
    batch_add_g1, batch_add_g2, msm_g1, msm_g1_tuned, msm_g2, msm_g2_tuned, pack_bits,
};
pub use pinned_vec::PinnedVec;
pub use point_staging::PointStaging;
pub use reservation::{reserve_device_memory, DeviceReservation};
pub use resident::{copies_from, ResidentBases};
pub use tuning::{G2FirstLevel, MsmRun, MsmTuning};
