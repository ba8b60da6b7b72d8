//! Where the arithmetic runs: the CPU (blstrs) and, with feature `cuda`, our
//! CUDA prover. Both compute the same values; the CPU is the reference.
//!
//! ```
//! use blstrs::{G1Affine, Scalar};
//! use group::prime::PrimeCurveAffine;
//! use groth16_gpu::backend::cpu::msm;
//!
//! let bases = vec![G1Affine::generator(); 3];
//! let scalars = [1u64, 2, 3].map(Scalar::from);
//! let sum = msm(&bases, &scalars)?; // 6 · generator
//! assert_eq!(sum, G1Affine::generator() * Scalar::from(6u64));
//! # Ok::<(), groth16_gpu::Error>(())
//! ```

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
