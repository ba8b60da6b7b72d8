//! The CPU backend: a parallel radix-2 NTT over the scalar field, the H
//! polynomial, and multi-scalar multiplication through blst.
//!
//! ```
//! use blstrs::Scalar;
//! use groth16_gpu::backend::cpu::Domain;
//!
//! let domain = Domain::new(3)?; // the smallest power of two that holds 3
//! assert_eq!(domain.size(), 4);
//! let original: Vec<Scalar> = (1..=4u64).map(Scalar::from).collect();
//! let mut values = original.clone();
//! domain.ntt(&mut values);
//! domain.intt(&mut values);
//! assert_eq!(values, original);
//! # Ok::<(), groth16_gpu::Error>(())
//! ```

mod affine;
pub(crate) mod msm;
mod ntt;

pub use affine::BatchAffine;
pub use msm::{msm, msm_with_density, MsmAffine};
pub use ntt::{compute_h, ntt_in_place, Domain};
pub(crate) use ntt::{powers, zeroed};
