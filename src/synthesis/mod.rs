//! Synthesis: from a bellpepper circuit to the witness, the A/B/C evaluations
//! and the query densities the prover needs.
//!
//! Two paths give identical [`Assignment`]s:
//! - [`synthesize`]: direct, evaluating each constraint as the circuit enforces it;
//! - [`CircuitShape`]: record a circuit's constraint matrices once, then for
//!   each further proof of that shape compute only the witness and evaluate
//!   A/B/C as parallel sparse products.
//!
//! ```
//! # use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
//! # use blstrs::Scalar;
//! # #[derive(Clone)]
//! # struct Square(Option<Scalar>);
//! # impl Circuit<Scalar> for Square {
//! #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//! #         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
//! #         let y = cs.alloc_input(|| "y", || self.0.map(|x| x * x).ok_or(SynthesisError::AssignmentMissing))?;
//! #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//! #         Ok(())
//! #     }
//! # }
//! use groth16_gpu::synthesis::{synthesize, CircuitShape};
//!
//! let circuit = Square(Some(Scalar::from(3u64)));
//! let direct = synthesize(circuit.clone())?;
//! let shape = CircuitShape::record(Square(None))?;  // once per circuit type
//! let witness = shape.witness(circuit)?;            // per proof: the variables only
//! assert_eq!(shape.assign(witness)?, direct);       // A/B/C from the shape
//! # Ok::<(), groth16_gpu::Error>(())
//! ```

mod assignment;
mod density;
mod huge_pages;
mod matrix;
mod products;
mod recorder;
mod shape;
mod shape_file;
mod witness;

pub use assignment::{Assignment, ProvingAssignment};
pub use density::Density;
pub use matrix::{Column, SparseMatrix};
pub use shape::CircuitShape;
pub use witness::{JoinedInto, WitnessAssignment, WitnessValues};

use bellpepper_core::{Circuit, ConstraintSystem, Index, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

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

/// Synthesizes circuits of one shape, such as the partitions of a proof or
/// any circuits proved with one key: the first circuit's shape is recorded
/// while it is synthesized, the others meanwhile compute only their
/// witnesses, and each is then evaluated from the recorded matrices.
///
/// Gives what [`synthesize`] gives each circuit. A circuit whose witness
/// does not fit the first one's constraints is an error
/// ([`Error::ShapeMismatch`] or [`Error::Unsatisfied`]): with one key, at
/// most one of the two could have made a valid proof.
pub fn synthesize_batch<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
) -> Result<Vec<Assignment>, Error> {
    if circuits.len() < 2 {
        return circuits.into_iter().map(synthesize).collect();
    }
    let (shape, witnesses) = batch_witnesses(circuits)?;
    witnesses
        .into_iter()
        .map(|witness| shape.assign(witness))
        .collect()
}

/// The witnesses of circuits of one shape (two or more), and that shape:
/// the first circuit's shape is recorded while it is synthesized and the
/// others meanwhile compute only their witnesses. Each witness is then
/// ready for [`CircuitShape::assign`], or for a prover that evaluates
/// A, B, C itself. Its counts are not checked here.
pub(crate) fn batch_witnesses<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
) -> Result<(CircuitShape, Vec<WitnessAssignment>), Error> {
    let mut circuits = circuits.into_iter();
    let Some(first) = circuits.next() else {
        return Err(Error::ShapeMismatch(
            "a batch of no circuits has no shape".into(),
        ));
    };
    let rest: Vec<C> = circuits.collect();
    let (recorded, witnesses) = rayon::join(
        || CircuitShape::record_with_witness(first),
        || {
            rest.into_par_iter()
                .map(|circuit| {
                    let mut witness = WitnessAssignment::counting();
                    circuit.synthesize(&mut witness)?;
                    Ok(witness)
                })
                .collect::<Result<Vec<_>, Error>>()
        },
    );
    let (shape, first_witness) = recorded?;
    let witnesses = std::iter::once(first_witness).chain(witnesses?).collect();
    Ok((shape, witnesses))
}
