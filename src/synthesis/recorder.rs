use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use super::{CircuitShape, SparseMatrix, WitnessAssignment};

/// Records a circuit's constraints as sparse matrices, and its witness too
/// when asked (otherwise the witness closures are not called).
pub(super) struct ShapeRecorder {
    num_inputs: usize,
    num_aux: usize,
    a: SparseMatrix,
    b: SparseMatrix,
    c: SparseMatrix,
    witness: Option<WitnessAssignment>,
}

impl ShapeRecorder {
    fn new(with_witness: bool) -> Self {
        Self {
            num_inputs: 0,
            num_aux: 0,
            a: SparseMatrix::new(),
            b: SparseMatrix::new(),
            c: SparseMatrix::new(),
            witness: with_witness.then(|| WitnessAssignment {
                input: Vec::new(),
                aux: Vec::new(),
                constraints: Some(0),
            }),
        }
    }

    /// The shape of `circuit`, with the constant one and the per-input
    /// constraints added as in bellperson; its witness when `with_witness`.
    pub(super) fn record<C: Circuit<Scalar>>(
        circuit: C,
        with_witness: bool,
    ) -> Result<(CircuitShape, Option<WitnessAssignment>), SynthesisError> {
        let mut recorder = Self::new(with_witness);
        recorder.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut recorder)?;
        for i in 0..recorder.num_inputs {
            recorder.a.push_unit_input_row(i);
            recorder.b.push_empty_row();
            recorder.c.push_empty_row();
        }
        let shape = CircuitShape::from_matrices(
            recorder.num_inputs,
            recorder.num_aux,
            [recorder.a, recorder.b, recorder.c],
        );
        Ok((shape, recorder.witness))
    }
}

impl ConstraintSystem<Scalar> for ShapeRecorder {
    type Root = Self;

    fn new() -> Self {
        ShapeRecorder::new(false)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if let Some(witness) = self.witness.as_mut() {
            witness.aux.push(f()?);
        }
        self.num_aux += 1;
        Ok(Variable(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if let Some(witness) = self.witness.as_mut() {
            witness.input.push(f()?);
        }
        self.num_inputs += 1;
        Ok(Variable(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.a.push_row(&a(LinearCombination::zero()));
        self.b.push_row(&b(LinearCombination::zero()));
        self.c.push_row(&c(LinearCombination::zero()));
        if let Some(count) = self.witness.as_mut().and_then(|w| w.constraints.as_mut()) {
            *count += 1;
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
