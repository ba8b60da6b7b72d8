use bellpepper_core::Circuit;
use blstrs::Scalar;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

use super::huge_pages;
use super::products::product_equals;
use super::recorder::ShapeRecorder;
use super::Column;
use super::{Assignment, Density, SparseMatrix, WitnessAssignment, WitnessValues};
use crate::Error;

mod join;

/// A circuit's constraint matrices, recorded once and reused for every proof
/// of circuits with the same shape (the partitions of a PoRep, say).
///
/// ```
/// # use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
/// # use blstrs::Scalar;
/// # struct Square(Option<Scalar>);
/// # impl Circuit<Scalar> for Square {
/// #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
/// #         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
/// #         let y = cs.alloc_input(|| "y", || self.0.map(|x| x * x).ok_or(SynthesisError::AssignmentMissing))?;
/// #         cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
/// #         Ok(())
/// #     }
/// # }
/// use groth16_gpu::synthesis::{synthesize, CircuitShape};
///
/// let shape = CircuitShape::record(Square(None))?;
/// let fast = shape.synthesize(Square(Some(Scalar::from(5u64))))?;
/// assert_eq!(fast, synthesize(Square(Some(Scalar::from(5u64))))?);
/// # Ok::<(), groth16_gpu::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitShape {
    identity: Identity,
    num_inputs: usize,
    num_aux: usize,
    a: SparseMatrix,
    b: SparseMatrix,
    c: SparseMatrix,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

/// A number drawn for each shape as it is made and shared by its clones
/// (shapes never change once made), so that a copy of one kept elsewhere (on
/// a device) is known for its own. Equality of shapes looks at their
/// content, not at this.
#[derive(Clone, Copy, Debug)]
struct Identity(u64);

impl Identity {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl PartialEq for Identity {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Identity {}

impl CircuitShape {
    /// A shape from its matrices; the densities follow from their entries.
    pub(super) fn from_matrices(
        num_inputs: usize,
        num_aux: usize,
        [a, b, c]: [SparseMatrix; 3],
    ) -> Self {
        let mut a_aux_density = Density::with_len(num_aux);
        let mut b_input_density = Density::with_len(num_inputs);
        let mut b_aux_density = Density::with_len(num_aux);
        a.for_each_entry(|_, column, _| {
            if let Column::Aux(i) = column {
                a_aux_density.mark(i);
            }
        });
        b.for_each_entry(|_, column, _| match column {
            Column::Input(i) => b_input_density.mark(i),
            Column::Aux(i) => b_aux_density.mark(i),
        });
        Self {
            identity: Identity::new(),
            num_inputs,
            num_aux,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
        }
    }

    /// Records the constraints of `circuit` (its witness values are not needed),
    /// with the constant one and the per-input constraints added as in bellperson.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self, Error> {
        Ok(ShapeRecorder::record(circuit, false)?.0)
    }

    /// [`record`](Self::record) from a circuit with values, computing its
    /// witness in the same run: the first of many circuits of one shape
    /// then needs no run of its own. Give the witness to
    /// [`assign`](Self::assign).
    pub fn record_with_witness<C: Circuit<Scalar>>(
        circuit: C,
    ) -> Result<(Self, WitnessAssignment), Error> {
        let (shape, witness) = ShapeRecorder::record(circuit, true)?;
        Ok((shape, witness.expect("recorded with values")))
    }

    /// Number of public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Number of auxiliary variables.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Number of constraints, the per-input ones included.
    pub fn num_constraints(&self) -> usize {
        self.a.num_rows()
    }

    /// A number unique to this shape (and its clones) in this process: what
    /// a copy of its matrices kept on a device is known by.
    pub fn identity(&self) -> u64 {
        self.identity.0
    }

    /// The A, B and C matrices.
    pub fn matrices(&self) -> [&SparseMatrix; 3] {
        [&self.a, &self.b, &self.c]
    }

    /// Aux variables used in A; inputs used in B; aux variables used in B.
    pub fn densities(&self) -> [&Density; 3] {
        [
            &self.a_aux_density,
            &self.b_input_density,
            &self.b_aux_density,
        ]
    }

    /// Computes the witness of `circuit` and evaluates A, B, C from the recorded
    /// matrices. A circuit whose variable counts differ from the recorded shape
    /// is an error.
    pub fn synthesize<C: Circuit<Scalar>>(&self, circuit: C) -> Result<Assignment, Error> {
        self.assign(self.witness(circuit)?)
    }

    /// The witness of `circuit` alone: the circuit's own code, often
    /// single-threaded. [`assign`](Self::assign) then evaluates A, B, C over
    /// every core, so a caller with many circuits can compute their
    /// witnesses side by side and evaluate them one after another.
    pub fn witness<C: Circuit<Scalar>>(&self, circuit: C) -> Result<WitnessAssignment, Error> {
        let mut witness = WitnessAssignment::counting_with_capacity(self.num_inputs, self.num_aux);
        circuit.synthesize(&mut witness)?;
        Ok(witness)
    }

    /// Evaluates A, B, C for a witness computed elsewhere, and checks that
    /// A·B = C in every row: the witness and the constraints come from
    /// separate runs of circuit code, so a mismatch between them is an
    /// error here, not an invalid proof later.
    pub fn assign(&self, witness: WitnessAssignment) -> Result<Assignment, Error> {
        self.check_counts(&witness)?;
        let (a, b, c) = self.evaluate_checked(&witness.input, &witness.aux)?;
        Ok(Assignment {
            input: witness.input,
            aux: witness.aux,
            a,
            b,
            c,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        })
    }

    /// Err unless `witness` has this shape's numbers of inputs, aux
    /// variables and (where counted) constraints.
    pub fn check_counts<'w>(&self, witness: impl Into<WitnessValues<'w>>) -> Result<(), Error> {
        let witness = witness.into();
        // The per-input constraints are the shape's own, not the circuit's.
        let circuit_constraints = self.num_constraints() - self.num_inputs;
        let counts_match = witness.input.len() == self.num_inputs
            && witness.aux.len() == self.num_aux
            && witness
                .constraints
                .map_or(true, |n| n == circuit_constraints);
        if counts_match {
            return Ok(());
        }
        Err(Error::ShapeMismatch(format!(
            "shape has {} inputs, {} aux variables and {} constraints; the circuit made {}, {} and {}",
            self.num_inputs,
            self.num_aux,
            circuit_constraints,
            witness.input.len(),
            witness.aux.len(),
            witness
                .constraints
                .map_or("an uncounted number".to_string(), |n| n.to_string()),
        )))
    }

    /// Synthesizes many circuits of this shape in parallel over the cores.
    pub fn synthesize_many<C: Circuit<Scalar> + Send>(
        &self,
        circuits: Vec<C>,
    ) -> Result<Vec<Assignment>, Error> {
        circuits
            .into_par_iter()
            .map(|circuit| self.synthesize(circuit))
            .collect()
    }
}

/// Rows evaluated per task: enough to amortize a task, few enough to spread.
const ROWS_PER_TASK: usize = 4096;

impl CircuitShape {
    /// A, B and C times the witness in one pass over the rows, each row's
    /// a·b = c checked as it is made (one product, while the values are hot).
    #[allow(clippy::type_complexity)]
    pub(crate) fn evaluate_checked(
        &self,
        input: &[Scalar],
        aux: &[Scalar],
    ) -> Result<(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>), Error> {
        let rows = self.num_constraints();
        let (mut a, mut b, mut c) = (
            Vec::with_capacity(rows),
            Vec::with_capacity(rows),
            Vec::with_capacity(rows),
        );
        for v in [&mut a, &mut b, &mut c] {
            huge_pages::advise(v.spare_capacity_mut());
        }
        self.evaluate_rows(
            0,
            input,
            aux,
            &mut a.spare_capacity_mut()[..rows],
            &mut b.spare_capacity_mut()[..rows],
            &mut c.spare_capacity_mut()[..rows],
        )?;
        // SAFETY: evaluate_rows wrote each of the first `rows` slots of all
        // three vectors (it returns Ok only after every row).
        unsafe {
            a.set_len(rows);
            b.set_len(rows);
            c.set_len(rows);
        }
        Ok((a, b, c))
    }

    /// Rows `first_row ..` (as many as `a` holds) of A, B and C times the
    /// witness, written into `a`, `b`, `c`, each checked as in
    /// [`assign`](Self::assign): for a prover that sends the evaluations
    /// somewhere piece by piece (the GPU prover evaluates them straight into
    /// its pinned upload buffer). A witness of other lengths than the
    /// shape's, or slices of different lengths or past the last row, are
    /// an error.
    pub fn evaluate_rows_into(
        &self,
        first_row: usize,
        input: &[Scalar],
        aux: &[Scalar],
        [a, b, c]: [&mut [Scalar]; 3],
    ) -> Result<(), Error> {
        let rows_fit = a.len() == b.len()
            && a.len() == c.len()
            && first_row
                .checked_add(a.len())
                .is_some_and(|end| end <= self.num_constraints());
        if !rows_fit || input.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(Error::ShapeMismatch(format!(
                "rows {first_row}.. into slices of {}, {} and {} with {} inputs and {} aux \
                 variables; the shape has {} rows, {} inputs and {} aux variables",
                a.len(),
                b.len(),
                c.len(),
                input.len(),
                aux.len(),
                self.num_constraints(),
                self.num_inputs,
                self.num_aux
            )));
        }
        // SAFETY: MaybeUninit<Scalar> has Scalar's layout, and evaluate_rows
        // only ever writes initialized values through these views.
        let uninit = |v: &mut [Scalar]| unsafe {
            std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<MaybeUninit<Scalar>>(), v.len())
        };
        self.evaluate_rows(first_row, input, aux, uninit(a), uninit(b), uninit(c))
    }

    /// Writes rows `first_row .. first_row + a.len()` into every slot of
    /// `a`, `b`, `c` (equal lengths, within the shape, the witness of the
    /// shape's lengths: the callers check), in parallel over the cores; the first
    /// row whose a·b differs from c is an error, once all are written.
    fn evaluate_rows(
        &self,
        first_row: usize,
        input: &[Scalar],
        aux: &[Scalar],
        a: &mut [MaybeUninit<Scalar>],
        b: &mut [MaybeUninit<Scalar>],
        c: &mut [MaybeUninit<Scalar>],
    ) -> Result<(), Error> {
        debug_assert!(a.len() == b.len() && a.len() == c.len());
        let first_unsatisfied = a
            .par_chunks_mut(ROWS_PER_TASK)
            .zip(b.par_chunks_mut(ROWS_PER_TASK))
            .zip(c.par_chunks_mut(ROWS_PER_TASK))
            .enumerate()
            .filter_map(|(task, ((a, b), c))| {
                let task_row = first_row + task * ROWS_PER_TASK;
                let mut unsatisfied = None;
                for (i, ((a, b), c)) in a.iter_mut().zip(b).zip(c).enumerate() {
                    let row = task_row + i;
                    let (va, vb, vc) = (
                        self.a.row_times(row, input, aux),
                        self.b.row_times(row, input, aux),
                        self.c.row_times(row, input, aux),
                    );
                    if unsatisfied.is_none() && !product_equals(&va, &vb, &vc) {
                        unsatisfied = Some(row);
                    }
                    a.write(va);
                    b.write(vb);
                    c.write(vc);
                }
                unsatisfied
            })
            .min();
        match first_unsatisfied {
            Some(constraint) => Err(Error::Unsatisfied { constraint }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;
    use ff::Field;

    use super::{CircuitShape, ROWS_PER_TASK};
    use crate::Error;

    /// x_{i+1} = x_i², with every x_i a variable: one row per step.
    struct Squares {
        steps: usize,
        start: Option<Scalar>,
    }

    impl Circuit<Scalar> for Squares {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let mut value = self.start;
            let mut x = cs.alloc(|| "x0", || value.ok_or(SynthesisError::AssignmentMissing))?;
            for _ in 0..self.steps {
                value = value.map(|v| v.square() + Scalar::ONE);
                let y = cs.alloc(|| "y", || value.ok_or(SynthesisError::AssignmentMissing))?;
                cs.enforce(
                    || "x*x=y-1",
                    |lc| lc + x,
                    |lc| lc + x,
                    |lc| lc + y - CS::one(),
                );
                x = y;
            }
            Ok(())
        }
    }

    #[test]
    fn rows_evaluated_in_pieces_equal_the_whole() {
        let steps = 2 * ROWS_PER_TASK + 1001;
        let shape = CircuitShape::record(Squares { steps, start: None }).unwrap();
        let circuit = Squares {
            steps,
            start: Some(Scalar::from(3u64)),
        };
        let witness = shape.witness(circuit).unwrap();
        let whole = shape.assign(witness.clone()).unwrap();
        let n = shape.num_constraints();
        for piece in [1, 3000, ROWS_PER_TASK, n] {
            let mut rows = [
                vec![Scalar::ZERO; n],
                vec![Scalar::ZERO; n],
                vec![Scalar::ZERO; n],
            ];
            let [a, b, c] = &mut rows;
            for (k, ((a, b), c)) in a
                .chunks_mut(piece)
                .zip(b.chunks_mut(piece))
                .zip(c.chunks_mut(piece))
                .enumerate()
            {
                shape
                    .evaluate_rows_into(k * piece, &witness.input, &witness.aux, [a, b, c])
                    .unwrap();
            }
            assert_eq!(
                rows,
                [whole.a.clone(), whole.b.clone(), whole.c.clone()],
                "{piece}"
            );
        }

        // Changing y_k breaks rows k and k + 1; a piece from row k + 1 on
        // names its own first broken row.
        let mut broken = witness.clone();
        let k = ROWS_PER_TASK + 5;
        broken.aux[k + 1] += Scalar::ONE;
        let mut rows = [
            vec![Scalar::ZERO; 100],
            vec![Scalar::ZERO; 100],
            vec![Scalar::ZERO; 100],
        ];
        let [a, b, c] = &mut rows;
        let err = shape
            .evaluate_rows_into(k + 1, &broken.input, &broken.aux, [a, b, c])
            .unwrap_err();
        assert!(
            matches!(err, Error::Unsatisfied { constraint } if constraint == k + 1),
            "{err}"
        );
        let err = shape.assign(broken.clone()).unwrap_err();
        assert!(
            matches!(err, Error::Unsatisfied { constraint } if constraint == k),
            "{err}"
        );
    }
}
