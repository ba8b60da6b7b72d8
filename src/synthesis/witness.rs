use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// The variables a [`WitnessAssignment`] hands out.
const PLACEHOLDER_AUX: Variable = Variable(Index::Aux(0));
const PLACEHOLDER_INPUT: Variable = Variable(Index::Input(0));

/// A witness-only constraint system: records variable values and never builds
/// a linear combination (enforce's closures are not called). Used with a
/// recorded [`CircuitShape`](super::CircuitShape), which supplies the constraints.
///
/// Every variable it hands out is the same placeholder (one for aux
/// variables, one for inputs). Nothing reads them here, and the linear
/// combinations that gadgets build outside `enforce` (SHA-256's additions,
/// bit packing) then stay one term long instead of growing, re-sorting and
/// being scaled term by term. A circuit must not tell its variables apart
/// by their handles; none of bellpepper's, neptune's or Filecoin's gadgets
/// do, and the shape's satisfaction check refuses a witness that went wrong.
#[derive(Debug, Clone)]
pub struct WitnessAssignment {
    /// Public inputs, the constant one first.
    pub input: Vec<Scalar>,
    /// Auxiliary variables.
    pub aux: Vec<Scalar>,
    /// Constraints enforced, when counted: a cheap check against a recorded
    /// shape (`None` for witnesses built elsewhere).
    pub constraints: Option<usize>,
}

impl WitnessAssignment {
    /// Bulk witness generation skips `enforce`: the count no longer means anything.
    fn skip_constraint_count(&mut self) {
        self.constraints = None;
    }

    /// An empty witness (the constant one allocated) that counts constraints.
    pub fn counting() -> Self {
        Self {
            constraints: Some(0),
            ..Self::default()
        }
    }

    /// [`counting`](Self::counting), with room for the given numbers of
    /// inputs and aux variables: a witness of known size then grows without
    /// copying itself (or faulting in pages twice) as it doubles.
    pub fn counting_with_capacity(inputs: usize, aux: usize) -> Self {
        let mut witness = Self::counting();
        witness
            .input
            .reserve(inputs.saturating_sub(witness.input.len()));
        witness.aux.reserve(aux);
        super::huge_pages::advise(witness.aux.spare_capacity_mut());
        witness
    }
}

impl Default for WitnessAssignment {
    fn default() -> Self {
        Self {
            input: vec![Scalar::ONE],
            aux: Vec::new(),
            constraints: None,
        }
    }
}

impl ConstraintSystem<Scalar> for WitnessAssignment {
    type Root = Self;

    /// An empty, counting system: no constant one, as bellperson's
    /// `ProvingAssignment::new()`. Circuits that synthesize parts in
    /// sub-systems (WindowPoSt) allocate the sub-system's one themselves,
    /// and [`extend`](ConstraintSystem::extend) drops it.
    fn new() -> Self {
        Self {
            input: Vec::new(),
            aux: Vec::new(),
            constraints: Some(0),
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(PLACEHOLDER_AUX)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        Ok(PLACEHOLDER_INPUT)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if let Some(n) = self.constraints.as_mut() {
            *n += 1;
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

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        match (self.constraints.as_mut(), other.constraints) {
            (Some(n), Some(m)) => *n += m,
            // An uncounted part leaves the whole uncounted.
            (_, None) => self.skip_constraint_count(),
            (None, Some(_)) => {}
        }
        self.input
            .extend_from_slice(other.input.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.skip_constraint_count();
        self.input.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.skip_constraint_count();
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.skip_constraint_count();
        let aux_start = self.aux.len();
        let input_start = self.input.len();
        self.aux.resize(aux_start + aux_n, Scalar::ZERO);
        self.input.resize(input_start + inputs_n, Scalar::ZERO);
        (&mut self.aux[aux_start..], &mut self.input[input_start..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.skip_constraint_count();
        let start = self.input.len();
        self.input.resize(start + n, Scalar::ZERO);
        &mut self.input[start..]
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.skip_constraint_count();
        let start = self.aux.len();
        self.aux.resize(start + n, Scalar::ZERO);
        &mut self.aux[start..]
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.input
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}
