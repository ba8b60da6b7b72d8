//! bellperson 0.27's synthesis, for timing it against ours. bellperson keeps
//! its `ProvingAssignment` private, so this is an equivalent written for the
//! benchmark: the same work per call as bellperson's (groth16/prover/mod.rs,
//! lc.rs, prover/native.rs `synthesize_circuits_batch`), on the same density
//! type (ec-gpu-gen's `DensityTracker`): each constraint's A, B, C evaluated
//! against the assignment as it is enforced, zero coefficients skipped, unit
//! ones not multiplied. Not bellperson's code; a stand-in with its costs.
#![allow(dead_code)]

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::Field;
use rayon::prelude::*;

/// What bellperson's prover holds after synthesizing one circuit.
pub struct BellpersonStyleAssignment {
    pub a_aux_density: DensityTracker,
    pub b_input_density: DensityTracker,
    pub b_aux_density: DensityTracker,
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    pub input: Vec<Scalar>,
    pub aux: Vec<Scalar>,
}

/// Synthesizes one circuit as bellperson's prover does: the one first,
/// then the circuit, then one `input * 0 = 0` constraint per input.
pub fn synthesize<C: Circuit<Scalar>>(
    circuit: C,
) -> Result<BellpersonStyleAssignment, SynthesisError> {
    let mut cs = BellpersonStyleAssignment::new();
    cs.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.input.len() {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    Ok(cs)
}

/// bellperson's batch synthesis: the circuits in parallel over rayon.
pub fn synthesize_many<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
) -> Result<Vec<BellpersonStyleAssignment>, SynthesisError> {
    circuits.into_par_iter().map(synthesize).collect()
}

/// bellperson's `lc::eval_with_trackers`.
fn eval(
    lc: &LinearCombination<Scalar>,
    input_density: Option<&mut DensityTracker>,
    aux_density: Option<&mut DensityTracker>,
    input: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    let mut add = |value: Scalar, coeff: &Scalar| {
        acc += if *coeff == Scalar::ONE {
            value
        } else {
            value * coeff
        };
    };
    let mut input_density = input_density;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            add(input[i], coeff);
            if let Some(d) = input_density.as_deref_mut() {
                d.inc(i);
            }
        }
    }
    let mut aux_density = aux_density;
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            add(aux[i], coeff);
            if let Some(d) = aux_density.as_deref_mut() {
                d.inc(i);
            }
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for BellpersonStyleAssignment {
    type Root = Self;

    fn new() -> Self {
        Self {
            a_aux_density: DensityTracker::new(),
            b_input_density: DensityTracker::new(),
            b_aux_density: DensityTracker::new(),
            a: vec![],
            b: vec![],
            c: vec![],
            input: vec![],
            aux: vec![],
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        self.b_input_density.add_element();
        Ok(Variable(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let (input, aux) = (&self.input, &self.aux);
        let av = eval(&a, None, Some(&mut self.a_aux_density), input, aux);
        let bv = eval(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            input,
            aux,
        );
        // bellperson evaluates C with bellpepper's own eval: no trackers.
        let cv = c.eval(input, aux);
        self.a.push(av);
        self.b.push(bv);
        self.c.push(cv);
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
        self.a_aux_density.extend(&other.a_aux_density, false);
        self.b_input_density.extend(&other.b_input_density, true);
        self.b_aux_density.extend(&other.b_aux_density, false);
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        self.c.extend_from_slice(&other.c);
        self.input.extend_from_slice(&other.input[1..]);
        self.aux.extend_from_slice(&other.aux);
    }
}
