use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::products::{add_product, is_zero};
use super::Density;

/// Everything the prover needs from one synthesized circuit: the witness,
/// the A, B, C evaluations per constraint, and which variables each query uses.
///
/// Made by [`ProvingAssignment`] (direct synthesis) or by
/// [`CircuitShape::synthesize`](super::CircuitShape::synthesize) (pre-compiled);
/// both give identical values for the same circuit and witness.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Public inputs, the constant one first.
    pub input: Vec<Scalar>,
    /// Auxiliary (private) variables.
    pub aux: Vec<Scalar>,
    /// A·z per constraint, the input constraints last.
    pub a: Vec<Scalar>,
    /// B·z per constraint.
    pub b: Vec<Scalar>,
    /// C·z per constraint.
    pub c: Vec<Scalar>,
    /// Aux variables used in some A row.
    pub a_aux_density: Density,
    /// Inputs used in some B row.
    pub b_input_density: Density,
    /// Aux variables used in some B row.
    pub b_aux_density: Density,
}

impl Assignment {
    /// Number of constraints, the per-input ones included.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }
}

/// A bellpepper `ConstraintSystem` that evaluates each constraint as it is
/// enforced, with bellperson's conventions: the caller allocates the constant
/// one first and adds one `input * 0 = 0` constraint per input at the end
/// (see [`synthesize`](super::synthesize)).
#[derive(Debug, Default)]
pub struct ProvingAssignment {
    assignment: Assignment,
}

impl ProvingAssignment {
    /// The synthesized values.
    pub fn into_assignment(self) -> Assignment {
        self.assignment
    }

    /// Number of inputs allocated so far, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.assignment.input.len()
    }
}

/// Σ coeff·value over an LC, marking used variables; zero coefficients are
/// skipped and mark nothing, as in bellperson.
fn evaluate(
    lc: &LinearCombination<Scalar>,
    input: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&index, coeff) in lc.iter_inputs() {
        if is_zero(coeff) {
            continue;
        }
        add_product(&mut acc, &input[index], coeff);
        if let Some(d) = input_density.as_deref_mut() {
            d.mark(index);
        }
    }
    for (&index, coeff) in lc.iter_aux() {
        if is_zero(coeff) {
            continue;
        }
        add_product(&mut acc, &aux[index], coeff);
        if let Some(d) = aux_density.as_deref_mut() {
            d.mark(index);
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let s = &mut self.assignment;
        s.aux.push(f()?);
        s.a_aux_density.push_unused();
        s.b_aux_density.push_unused();
        Ok(Variable(Index::Aux(s.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let s = &mut self.assignment;
        s.input.push(f()?);
        s.b_input_density.push_unused();
        Ok(Variable(Index::Input(s.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let s = &mut self.assignment;
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        // Inputs are fully dense in A through the input constraints: no tracker.
        let av = evaluate(&a, &s.input, &s.aux, None, Some(&mut s.a_aux_density));
        let bv = evaluate(
            &b,
            &s.input,
            &s.aux,
            Some(&mut s.b_input_density),
            Some(&mut s.b_aux_density),
        );
        let cv = evaluate(&c, &s.input, &s.aux, None, None);
        s.a.push(av);
        s.b.push(bv);
        s.c.push(cv);
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

    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-system synthesized on its own; its first input is its
    /// own constant one and is dropped, as in bellperson.
    fn extend(&mut self, other: &Self) {
        let (s, o) = (&mut self.assignment, &other.assignment);
        s.a_aux_density.extend_from(&o.a_aux_density, 0);
        // The sub-system's one is ours: B using it there uses ours (bellperson
        // coalesces the two bits too; WindowPoSt's sectors rely on it).
        if o.b_input_density.is_used(0) && !s.b_input_density.is_empty() {
            s.b_input_density.mark(0);
        }
        s.b_input_density.extend_from(&o.b_input_density, 1);
        s.b_aux_density.extend_from(&o.b_aux_density, 0);
        s.a.extend_from_slice(&o.a);
        s.b.extend_from_slice(&o.b);
        s.c.extend_from_slice(&o.c);
        s.input.extend_from_slice(o.input.get(1..).unwrap_or(&[]));
        s.aux.extend_from_slice(&o.aux);
    }
}
