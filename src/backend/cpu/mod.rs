//! The CPU backend: a parallel radix-2 NTT over the scalar field, the H
//! polynomial, and multi-scalar multiplication through blst.

mod affine;
pub(crate) mod msm;
mod ntt;

pub use affine::BatchAffine;
pub use msm::{msm, msm_with_density, MsmAffine};
pub(crate) use ntt::powers;
pub use ntt::{compute_h, ntt_in_place, Domain};
