//! Synthesis: from a bellpepper circuit to the witness, the A/B/C evaluations
//! and the query densities the prover needs.
//!
//! Two paths give identical [`Assignment`]s:
//! - [`synthesize`]: direct, evaluating each constraint as the circuit enforces it;
//! - [`CircuitShape`]: record a circuit's constraint matrices once, then for
//!   each further proof of that shape compute only the witness and evaluate
//!   A/B/C as parallel sparse products.

mod assignment;
mod density;
mod huge_pages;
mod matrix;
mod products;
mod shape;
mod shape_file;
mod witness;

pub use assignment::{Assignment, ProvingAssignment};
pub use density::Density;
pub use matrix::{Column, SparseMatrix};
pub use shape::CircuitShape;
pub use witness::WitnessAssignment;

use bellpepper_core::{Circuit, ConstraintSystem, Index, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::Error;

/// Synthesizes `circuit` directly, with bellperson's conventions: the
/// constant one is input 0, and each input gets an `input * 0 = 0` constraint
/// after the circuit's own.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Assignment, Error> {
    let mut cs = ProvingAssignment::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.num_inputs() {
        cs.enforce(
            || "input constraint",
            |lc| lc + Variable(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(cs.into_assignment())
}
