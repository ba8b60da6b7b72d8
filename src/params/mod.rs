//! Proving and verifying keys in bellperson's `.params` layout: read from a
//! file (memory-mapped) or a stream, decoded in parallel; written back; and
//! generated for a circuit.
//!
//! Layout: the verifying key (alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1,
//! delta_g2, then a big-endian u32 count and the ic points), then the h, l, a,
//! b_g1 and b_g2 queries, each a big-endian u32 count and uncompressed points
//! (G1 96 bytes, G2 192 bytes).
//!
//! ```
//! # use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
//! # use blstrs::Scalar;
//! # struct Square(Option<Scalar>);
//! # impl Circuit<Scalar> for Square {
//! #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//! #         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
//! #         let y = cs.alloc_input(|| "y", || self.0.map(|x| x * x).ok_or(SynthesisError::AssignmentMissing))?;
//! #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//! #         Ok(())
//! #     }
//! # }
//! use groth16_gpu::params::{generate_random_parameters, CheckMode, ProvingKey};
//!
//! let key = generate_random_parameters(Square(None), &mut rand_core::OsRng)?;
//! let mut bytes = Vec::new();
//! key.write(&mut bytes)?;
//! // Untrusted bytes: check every point, subgroups included.
//! let read = ProvingKey::read(&bytes[..], CheckMode::Subgroup)?;
//! assert_eq!(read.h, key.h);
//! assert!(ProvingKey::read(&bytes[..bytes.len() - 1], CheckMode::Subgroup).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod codec;
mod fixed_base;
mod generator;
mod host_memory;
mod reader;
mod writer;

pub use codec::CheckMode;
#[cfg(feature = "cuda")]
pub use generator::generate_parameters_for_shape_on_gpu;
pub use generator::{
    generate_parameters, generate_parameters_for_shape, generate_parameters_for_shape_random,
    generate_random_parameters, Trapdoor,
};

use blstrs::{G1Affine, G2Affine};

/// Why a key could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// The data ends inside a section, or a count promises more points than remain.
    #[error("parameters truncated in {section}: it needs {needed} bytes, {available} remain")]
    Truncated {
        /// The section being read.
        section: &'static str,
        /// Bytes the section needs.
        needed: u64,
        /// Bytes left in the input.
        available: u64,
    },
    /// A point fails to decode or a validity check.
    #[error("parameters invalid in {section}: point {index} {reason}")]
    InvalidPoint {
        /// The section holding the point.
        section: &'static str,
        /// The point's index within its section.
        index: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Bytes follow the last section.
    #[error("parameters have {0} trailing bytes after the b_g2 section")]
    TrailingBytes(u64),
    /// The underlying reader failed.
    #[error("I/O error reading parameters: {0}")]
    Io(#[from] std::io::Error),
}

/// The verifying half of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α in G1.
    pub alpha_g1: G1Affine,
    /// β in G1.
    pub beta_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G1.
    pub delta_g1: G1Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// (β·A_i(τ) + α·B_i(τ) + C_i(τ)) / γ for each public input, the constant one first.
    pub ic: Vec<G1Affine>,
}

/// A Groth16 proving key: the verifying key and the five queries.
///
/// The a, b_g1 and b_g2 queries hold points only for the variables whose
/// polynomial is not zero; the prover pairs them with the witness through the
/// densities of an [`Assignment`](crate::synthesis::Assignment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvingKey {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// τ^i·Z(τ)/δ for i in 0..m-1, m the domain size.
    pub h: Vec<G1Affine>,
    /// (β·A_i(τ) + α·B_i(τ) + C_i(τ)) / δ for each aux variable.
    pub l: Vec<G1Affine>,
    /// A_i(τ) for inputs, then for the aux variables used in A.
    pub a: Vec<G1Affine>,
    /// B_i(τ) in G1 for the inputs, then the aux variables, used in B.
    pub b_g1: Vec<G1Affine>,
    /// B_i(τ) in G2, likewise.
    pub b_g2: Vec<G2Affine>,
}

impl ProvingKey {
    /// Bytes of this key in the `.params` layout.
    pub fn serialized_len(&self) -> u64 {
        let g1 = codec::G1_BYTES as u64;
        let g2 = codec::G2_BYTES as u64;
        let vk = 3 * g1 + 3 * g2 + 4 + self.vk.ic.len() as u64 * g1;
        let g1_points = (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) as u64;
        vk + 5 * 4 + g1_points * g1 + self.b_g2.len() as u64 * g2
    }
}
