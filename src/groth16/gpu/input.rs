//! What a GPU proof is made from: an assignment whose A, B, C the caller
//! evaluated, or a witness with its recorded shape, whose A, B, C the
//! upload evaluates straight into the key's pinned buffer (no copy of
//! them on the way to the bus).

use crate::groth16::prover::{KeySizes, ProverWitness};
use crate::synthesis::{Assignment, CircuitShape, WitnessValues};
use crate::Error;

#[derive(Clone, Copy)]
pub(super) enum ProofInput<'a> {
    Evaluated(&'a Assignment),
    Shaped {
        shape: &'a CircuitShape,
        witness: WitnessValues<'a>,
    },
}

impl<'a> ProofInput<'a> {
    /// The witness and densities the MSMs read.
    pub fn witness(&self) -> ProverWitness<'a> {
        match *self {
            Self::Evaluated(assignment) => ProverWitness::of(assignment),
            Self::Shaped { shape, witness } => {
                let [a_aux_density, b_input_density, b_aux_density] = shape.densities();
                ProverWitness {
                    input: witness.input,
                    aux: witness.aux,
                    a_aux_density,
                    b_input_density,
                    b_aux_density,
                }
            }
        }
    }

    /// Rows of A, B and C.
    pub fn num_constraints(&self) -> usize {
        match *self {
            Self::Evaluated(assignment) => assignment.num_constraints(),
            Self::Shaped { shape, .. } => shape.num_constraints(),
        }
    }

    /// Err unless the input is whole (a witness of its shape's counts) and
    /// the key's queries fit it.
    pub fn check(&self, sizes: &KeySizes) -> Result<(), Error> {
        match *self {
            Self::Evaluated(assignment) => sizes.check(assignment),
            Self::Shaped { shape, witness } => {
                shape.check_counts(witness)?;
                sizes.check_witness(shape.num_constraints(), &self.witness())
            }
        }
    }
}
