//! Where the arithmetic runs: the CPU (blstrs) and, with feature `cuda`, our
//! CUDA prover. Both compute the same values; the CPU is the reference.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
